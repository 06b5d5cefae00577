import IORedis, { Cluster, type RedisOptions } from 'ioredis';
import { waitOrTimeout } from '../utils/timers';
import type { ClusterConnection, QueueConnection } from '../interfaces';
import { createMemoryConnection, isMemoryUrl } from './memory-backend';
import { noUrlScheme, notRedisUrl } from './redis.messages';

export type RedisClient = IORedis | Cluster;

export function isClient(value: unknown): value is RedisClient {
  return value instanceof IORedis || value instanceof Cluster;
}

/** Idle time before the first TCP keepalive probe: under the idle timeouts of common NATs and load balancers (≥ 60 s). */
const KEEPALIVE_MS = 15_000;

/**
 * The client of a `connection` the module opens itself. Its invariants:
 * - auto-pipelined: the commands of one tick leave in one write (the library's throughput rests on it:
 *   BENCHMARKS.md, "Method"); lazy, so a start-up that fails first leaves no socket open;
 * - TCP keepalive (not ioredis' 2-hour default) keeps NATs from dropping an idle flow and notices a
 *   vanished peer within seconds; a peer that ACKs but never answers is SubscriberHeartbeat's and
 *   CommandSupervisor's business;
 * - every call bounded by commandTimeoutMs and never resent: a script whose reply was lost may have
 *   run, and must not run twice (a push stored twice). Reconnection attempts come sooner than calls
 *   time out, so a call queued while Redis is away is flushed at a failed attempt, never sent late.
 */
export function createClient(connection: Exclude<QueueConnection, RedisClient>, commandTimeoutMs: number): RedisClient {
  const shared = { enableAutoPipelining: true, lazyConnect: true };
  const keepAlive = { keepAlive: KEEPALIVE_MS };
  const bounded: RedisOptions = {
    commandTimeout: commandTimeoutMs,
    connectTimeout: commandTimeoutMs,
    maxRetriesPerRequest: 0,
    retryStrategy: (attempt) => Math.min(attempt * 50, 2000, Math.floor(commandTimeoutMs / 2)),
  };
  // memory://: the same client and options, connected to an instance in this process instead of a socket,
  // but for auto-pipelining: the instance already takes what a tick sent as one batch, and the pipeline's
  // own turn of the event loop would make each round trip two (a test stepping a day of ticks pays each).
  if (isMemoryUrl(connection)) {
    return createMemoryConnection(connection, { ...shared, ...bounded, enableAutoPipelining: false });
  }
  if (typeof connection === 'string') return new IORedis(connection, { ...shared, ...keepAlive, ...bounded });
  if ('cluster' in connection) {
    // Cluster nodes never retry by themselves (ioredis closes them and re-routes after a slot refresh).
    const { options } = connection as ClusterConnection;
    const nodeTimeouts = { ...keepAlive, commandTimeout: commandTimeoutMs, connectTimeout: commandTimeoutMs };
    return new Cluster(connection.cluster, {
      ...shared,
      ...options,
      redisOptions: { ...nodeTimeouts, ...options?.redisOptions },
    });
  }
  return new IORedis({ ...shared, ...keepAlive, ...bounded, ...(connection as RedisOptions) });
}

/** Schemes of the URLs ioredis understands; it reads any other `x://host` as a socket path named `//host`. */
const REDIS_URL = /^rediss?:\/\//i;
const ANY_URL = /^([a-z][a-z0-9+.-]*):\/\//i;

export function checkUrl(connection: QueueConnection): void {
  if (typeof connection !== 'string' || REDIS_URL.test(connection)) return;
  const scheme = ANY_URL.exec(connection)?.[1];
  if (scheme !== undefined) {
    if (!isMemoryUrl(connection)) throw notRedisUrl(describeTarget(connection), scheme);
    return;
  }
  // A socket path is the one string ioredis reads without a scheme on purpose.
  if (connection.startsWith('/')) return;
  // ioredis would guess at "127.0.0.1:6379" (or a bare port): a URL states it, and the fix is one prefix away.
  throw noUrlScheme(
    /^\d+$/.test(connection)
      ? `redis://127.0.0.1:${connection}`
      : (withoutPassword(`redis://${connection}`) ?? 'redis://host:port'),
  );
}

/** The URL with its password masked; undefined when it is no URL. */
function withoutPassword(connection: string): string | undefined {
  try {
    const url = new URL(connection);
    if (url.password) url.password = '***';
    return url.toString();
  } catch {
    return undefined;
  }
}

/** Where Redis is, for log lines: never the password. */
export function describeTarget(connection: QueueConnection): string {
  if (typeof connection === 'string') return withoutPassword(connection) ?? 'the configured Redis URL';
  if (isClient(connection)) return 'the Redis client given as connection';
  if ('cluster' in connection)
    return `the cluster ${connection.cluster.map((node) => (typeof node === 'object' ? `${node.host ?? '127.0.0.1'}:${node.port ?? 6379}` : String(node))).join(', ')}`;
  const { host = '127.0.0.1', port = 6379, path } = connection as RedisOptions;
  return path ?? `${host}:${port}`;
}

/**
 * QUIT lets replies still in flight arrive, for as long as the shutdown budget allows; then the
 * connection is dropped (a frozen Redis never answers QUIT). A client that is not connected is dropped
 * at once: QUIT would resolve and leave ioredis reconnecting in the background.
 */
export async function closeClient(client: RedisClient, budgetMs: number): Promise<void> {
  // Closed already (a failed start-up closed it, then app.close() came): disconnecting again would only
  // start ioredis' reconnection timer.
  if (client.status === 'end') return;
  if (client.status !== 'ready' || budgetMs === 0) {
    client.disconnect();
    return;
  }
  const quit = client.quit().then(
    () => true,
    () => false,
  );
  if (!(await waitOrTimeout(quit, budgetMs)) || !(await quit)) client.disconnect();
}
