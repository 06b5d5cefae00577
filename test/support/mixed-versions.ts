import { fork, type ChildProcess } from 'node:child_process';
import { join } from 'node:path';
import IORedis from 'ioredis';
import { compileLibrary, libraryEnv, type SourcePatch } from './compile-library';
import { pollUntil, redisUrl, uniquePrefix } from './testing';

/** `previous`: the last release, unpacked from its tarball by scripts/mixed.js; `current`: this tree. */
export type Version = 'previous' | 'current';

/** What a handler of test/mixed/mixed-worker.js wrote to the log, and the marks the test adds. */
export interface LogEntry {
  k: 'start' | 'end' | 'killed';
  q: string;
  pid: number;
  v: Version;
  t: number;
  attempt: number;
  group?: string;
  id?: string;
  seqs?: number[];
  ok?: boolean;
  acked?: number;
  runAt?: number;
  tag?: string;
  occurrence?: number;
}

export interface MixedProcess {
  readonly version: Version;
  readonly pid: number;
  /** Calls `method` of the queue named `queue` in that process. */
  call<T = unknown>(queue: string, method: string, ...args: unknown[]): Promise<T>;
  /** Sends `signal` and resolves once the process is gone (a SIGKILL is marked in the log). */
  stop(signal?: 'SIGTERM' | 'SIGKILL'): Promise<void>;
}

export interface StartOptions {
  /** Runs the handlers of every queue (default: a producer only). */
  consume?: boolean;
  /** Declares the `@Recurring` schedule `tick` with this period. */
  recurringMs?: number;
}

const WORKER = join(__dirname, '../mixed/mixed-worker.js');

/**
 * Processes of two versions of the library on one Redis, for test/mixed: the previous release as it
 * was published, beside a private build of this tree (or of this tree with `patch` applied, to prove
 * that the suite notices a break). Each test gets its own prefix and log; whatever still runs after a
 * test is killed.
 */
export function useMixedVersions(patch?: SourcePatch) {
  const previous = process.env.NRQ_PREVIOUS_LIB;
  let current: ReturnType<typeof compileLibrary>;
  let redis: IORedis;
  const children = new Set<ChildProcess>();
  const state = { prefix: '', logKey: '' };

  beforeAll(() => {
    if (!previous) throw new Error('NRQ_PREVIOUS_LIB is not set: run these suites with `npm run test:mixed`');
    current = compileLibrary(patch);
    redis = new IORedis(redisUrl());
  });
  beforeEach(() => {
    state.prefix = uniquePrefix('mixed');
    state.logKey = `${state.prefix}-log`;
  });
  afterEach(() => {
    for (const child of children) child.kill('SIGKILL');
  });
  afterAll(async () => {
    current.remove();
    await redis.quit();
  });

  async function start(version: Version, options: StartOptions = {}): Promise<MixedProcess> {
    const env = {
      ...libraryEnv(version === 'current' ? current.dir : previous!),
      REDIS_URL: redisUrl(),
      PREFIX: state.prefix,
      LOG_KEY: state.logKey,
      VERSION: version,
      CONSUME: options.consume ? '1' : '0',
      RECURRING: options.recurringMs ? String(options.recurringMs) : '',
    };
    const child = fork(WORKER, [], { env, stdio: ['ignore', 'inherit', 'inherit', 'ipc'] });
    children.add(child);
    const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
    void exited.then(() => children.delete(child));
    const pending = new Map<number, { resolve(value: unknown): void; reject(error: Error): void }>();
    let next = 0;
    child.on('message', (message: { n?: number; value?: unknown; error?: string; ready?: boolean }) => {
      const call = message.n === undefined ? undefined : pending.get(message.n);
      if (!call) return;
      pending.delete(message.n!);
      if (message.error !== undefined) call.reject(new Error(`${version} ${child.pid}: ${message.error}`));
      else call.resolve(message.value);
    });
    void exited.then(() => {
      for (const call of pending.values()) call.reject(new Error(`${version} ${child.pid} exited during the call`));
      pending.clear();
    });
    await new Promise<void>((resolve, reject) => {
      child.once('message', () => resolve());
      void exited.then(() => reject(new Error(`the ${version} worker exited before it was ready`)));
    });
    return {
      version,
      pid: child.pid!,
      call<T>(queue: string, method: string, ...args: unknown[]): Promise<T> {
        const n = next++;
        return new Promise<T>((resolve, reject) => {
          pending.set(n, { resolve: resolve as (value: unknown) => void, reject });
          child.send({ n, queue, method, args });
        });
      },
      async stop(signal = 'SIGTERM') {
        child.kill(signal);
        await exited;
        // After the exit and long before its leases lapse: every redelivery of its work comes later.
        if (signal === 'SIGKILL') await redis.rpush(state.logKey, JSON.stringify({ k: 'killed', pid: child.pid }));
      },
    };
  }

  async function history(): Promise<LogEntry[]> {
    return (await redis.lrange(state.logKey, 0, -1)).map((line) => JSON.parse(line) as LogEntry);
  }

  return {
    start,
    history,
    redis: () => redis,
    prefix: () => state.prefix,
    /** The test's log key; the keys of its model database are named after it. */
    logKey: () => state.logKey,
    /** Makes the `poison` messages of the failing queue succeed from now on. */
    cure: () => redis.set(`${state.logKey}:cured`, '1'),
    /** Polls the log until `done` holds for it. */
    async until(done: (entries: LogEntry[]) => boolean, what: string, timeoutMs = 20_000): Promise<LogEntry[]> {
      return pollUntil(
        async () => {
          const entries = await history();
          return done(entries) ? entries : null;
        },
        what,
        timeoutMs,
        50,
      );
    },
  };
}
