import { QueueConfigError } from './errors';
import { missingPeer } from './queue.messages';

/**
 * Loads an optional peer dependency when a feature that needs it is first used, so the library itself
 * loads without it. A missing package becomes an error saying what to install; any other failure
 * (a broken install) is passed on as it is.
 */
export function loadOptional<T>(pkg: string, feature: string): T {
  try {
    // eslint-disable-next-line @typescript-eslint/no-require-imports -- loaded on first use, so the library loads without it
    return require(pkg) as T;
  } catch (error) {
    const { code, message } = error as NodeJS.ErrnoException;
    if (code === 'MODULE_NOT_FOUND' && message.includes(`'${pkg}'`))
      throw new QueueConfigError(missingPeer(feature, pkg));
    throw error;
  }
}
