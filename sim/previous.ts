/**
 * The previous release (0.2.0 today) as processes of the simulation run it during a rolling deploy: its
 * stores and its scripts' texts, from the tarball kept in compat/releases, on the same engine as this
 * tree's (docs/upgrading.md). Unpacked once per process; a run that cannot unpack it fails, saying so.
 */
import { existsSync, symlinkSync } from 'node:fs';
import { dirname, join } from 'node:path';
import type { DelayQueueStore, FixedQueueStore, QueueKeys } from './engine';

/** What the simulation takes of the previous release. */
export interface PreviousRelease {
  version: string;
  FixedQueueStore: typeof FixedQueueStore;
  DelayQueueStore: typeof DelayQueueStore;
  QueueKeys: typeof QueueKeys;
  /** A script's text as that release runs it. */
  scriptText(script: string): string;
  /** Its fencing tokens, drawn from a pool of its own (the simulation seeds it as it does this tree's). */
  fencingToken(): string;
}

interface Unpacked {
  version: string;
  tarball: string;
  package: string;
  remove(): void;
}

let loaded: PreviousRelease | undefined;

/** The previous release, unpacked on first use (and removed when the process exits). */
export function previousRelease(): PreviousRelease {
  if (loaded) return loaded;
  let unpacked: Unpacked;
  try {
    // eslint-disable-next-line @typescript-eslint/no-require-imports
    const { unpackPrevious } = require(releasesScript()) as { unpackPrevious: () => Unpacked };
    unpacked = unpackPrevious();
  } catch (error) {
    throw new Error(
      `the simulation runs processes of the previous release beside this tree's, and could not unpack it from compat/releases: ${(error as Error).message}`,
    );
  }
  process.once('exit', () => unpacked.remove());
  // Its modules find their dependencies in this repository's node_modules, as `npm run test:mixed` has them.
  symlinkSync(join(repository(), 'node_modules'), join(dirname(unpacked.package), 'node_modules'), 'dir');
  const dist = join(unpacked.package, 'dist');
  /* eslint-disable @typescript-eslint/no-require-imports */
  loaded = {
    version: unpacked.version,
    FixedQueueStore: require(join(dist, 'fixed-queue', 'fixed-queue.store.js')).FixedQueueStore,
    DelayQueueStore: require(join(dist, 'delay-queue', 'delay-queue.store.js')).DelayQueueStore,
    QueueKeys: require(join(dist, 'redis', 'keys.js')).QueueKeys,
    scriptText: require(join(dist, 'redis', 'scripts.js')).scriptText,
    fencingToken: require(join(dist, 'redis', 'fencing-token.js')).fencingToken,
  };
  /* eslint-enable @typescript-eslint/no-require-imports */
  return loaded;
}

/** The repository's root: the nearest folder above holding scripts/releases.js (a mutant's copy of sim/ sits inside it). */
function repository(): string {
  for (let dir = __dirname; ; dir = dirname(dir)) {
    if (existsSync(join(dir, 'scripts', 'releases.js'))) return dir;
    if (dirname(dir) === dir) throw new Error(`no scripts/releases.js above ${__dirname}`);
  }
}

function releasesScript(): string {
  return join(repository(), 'scripts', 'releases.js');
}
