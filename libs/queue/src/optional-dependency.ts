import { createRequire } from 'node:module';
import { missingPeer } from './queue.messages';

/**
 * Loads an optional peer dependency when a feature that needs it is first used, so the library itself
 * loads without it. A missing package becomes an error saying what to install; any other failure
 * (a broken install) is passed on as it is.
 *
 * `via`: load `pkg` as that installed package sees it, for a dependency of a peer rather than of this
 * library (the `cron` that @nestjs/schedule's registry expects its jobs to come from).
 */
export function loadOptional<T>(pkg: string, feature: string, via?: string): T {
  try {
    // Required here, on first use, never at the top of a file: the library must load without it.
    const load = via === undefined ? require : createRequire(require.resolve(via));
    return load(pkg) as T;
  } catch (error) {
    const { code, message } = error as NodeJS.ErrnoException;
    const missing = [via, pkg].find((name) => name !== undefined && message?.includes(`'${name}'`));
    if (code === 'MODULE_NOT_FOUND' && missing !== undefined) throw missingPeer(feature, missing);
    throw error;
  }
}
