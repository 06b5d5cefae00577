import { randomBytes } from 'node:crypto';
import { Test } from '@nestjs/testing';
import type { INestApplication, LoggerService, ModuleMetadata } from '@nestjs/common';
import IORedis, { Cluster } from 'ioredis';
import type { QueueClock, QueueConnection } from 'nestjs-redis-queues';
import { createMemoryClient, passTime } from 'nestjs-redis-queues/testing';
import { testLogs } from './logs';

export function redisUrl(): string {
  const url = process.env.REDIS_URL;
  if (!url) throw new Error('REDIS_URL is not set: the Jest global setup starts a redis-server and sets it');
  return url;
}

/** A key prefix of its own for each test, so tests sharing one server never see each other's keys. */
export function uniquePrefix(label = 't'): string {
  return `${label}-${randomBytes(4).toString('hex')}`;
}

/** Where the suite runs: jest.config.js runs some suites a second time on a Redis Cluster. */
export const topology: 'single' | 'cluster' = process.env.NRQ_TOPOLOGY === 'cluster' ? 'cluster' : 'single';

/** The test cluster's masters (test/setup/cluster-setup.js starts it, or NRQ_TEST_CLUSTER names one). */
export function clusterNodes(): { host: string; port: number }[] {
  const nodes = process.env.NRQ_TEST_CLUSTER;
  if (!nodes)
    throw new Error("NRQ_TEST_CLUSTER is not set: the cluster project's global setup starts a cluster and sets it");
  return nodes.split(',').map((node) => {
    const [host, port] = node.split(':');
    return { host, port: Number(port) };
  });
}

/** The `connection` option for the suite's topology. */
export function connection(): QueueConnection {
  return topology === 'cluster' ? { cluster: clusterNodes() } : redisUrl();
}

export type RawRedis = IORedis | Cluster;

/** The `memory` project runs suites on a memory instance of the test process (REDIS_URL=memory://...). */
export const onMemory = /^memory:\/\//i.test(process.env.REDIS_URL ?? '');

export function rawClient(): IORedis {
  // On memory, a client of the instance the suite's applications share (by its name in REDIS_URL).
  return onMemory ? createMemoryClient(redisUrl()) : new IORedis(redisUrl(), { lazyConnect: false });
}

/** A client of the suite's topology, for looking at what the library wrote. */
export function topologyClient(): RawRedis {
  return topology === 'cluster' ? new Cluster(clusterNodes()) : rawClient();
}

/** The servers holding data: in a Cluster each master answers for its own slots only. */
const masters = (redis: RawRedis): IORedis[] => (redis instanceof Cluster ? redis.nodes('master') : [redis]);

/** KEYS on every master. */
export async function keysMatching(redis: RawRedis, pattern: string): Promise<string[]> {
  // A Cluster client knows its masters once it has connected: the first use of a fresh one waits for that.
  if (redis instanceof Cluster) await redis.ping();
  return (await Promise.all(masters(redis).map((node) => node.keys(pattern)))).flat().sort();
}

/** Every key matching `pattern`, with its value as DUMP gives it (base64): equal while nothing touched them. */
export async function dumpsMatching(redis: RawRedis, pattern: string): Promise<Record<string, string>> {
  const keys = await keysMatching(redis, pattern);
  const dumps = await Promise.all(keys.map((key) => redis.dumpBuffer(key)));
  return Object.fromEntries(keys.map((key, i) => [key, dumps[i]?.toString('base64') ?? '']));
}

/** SCRIPT FLUSH on every master, as a restarted server (or a failover to a fresh node) would. */
export async function flushScripts(redis: RawRedis): Promise<void> {
  await Promise.all(masters(redis).map((node) => node.script('FLUSH')));
}

/**
 * Builds and initialises a Nest application (no HTTP listener) from module metadata; it logs errors
 * only, those the test expects kept rather than printed (see `expectErrors`), or everything into
 * `logger` when one is given (to check start-up and reconnection messages).
 */
export async function createApp(metadata: ModuleMetadata, logger: LoggerService = testLogs): Promise<INestApplication> {
  const moduleRef = await Test.createTestingModule(metadata).setLogger(logger).compile();
  const app = moduleRef.createNestApplication({ logger });
  try {
    await app.init();
  } catch (error) {
    await app.close();
    throw error;
  }
  return app;
}

/** Polls `probe` until it returns a truthy value (returned), failing with `what` after `timeoutMs`. */
export async function pollUntil<T>(
  probe: () => T | Promise<T>,
  what: string,
  timeoutMs = 10_000,
  everyMs = 10,
): Promise<NonNullable<T>> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const value = await probe();
    if (value) return value as NonNullable<T>;
    if (Date.now() > deadline) throw new Error(`Timed out after ${timeoutMs} ms waiting for ${what}`);
    await new Promise((resolve) => setTimeout(resolve, everyMs));
  }
}

/**
 * Polls `probe` until it holds, for what comes once `ms` of the queues' time has passed (a delay, a
 * period, a retry): on `memory://` the clock is moved `ms` ahead first (`passTime`: at once, each due
 * time on the way stepped through and its handlers settled), on a server the time passes for real
 * while it polls, as `pollUntil` alone would.
 */
export async function afterTime<T>(
  clock: QueueClock,
  ms: number,
  probe: () => T | Promise<T>,
  what: string,
  timeoutMs?: number,
): Promise<NonNullable<T>> {
  if (onMemory) await passTime(clock, ms);
  return pollUntil(probe, what, timeoutMs);
}

/** Whether `call` resolves: for polling until a service answers again. */
export function resolves(call: () => Promise<unknown>): Promise<boolean> {
  return call().then(
    () => true,
    () => false,
  );
}

/** A promise with its resolve function, for tests that wait on an event rather than on time. */
export function deferred<T = void>(): { promise: Promise<T>; resolve: (value: T) => void } {
  let resolve!: (value: T) => void;
  const promise = new Promise<T>((r) => (resolve = r));
  return { promise, resolve };
}
