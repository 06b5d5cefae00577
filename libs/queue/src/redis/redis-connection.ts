import {
  BeforeApplicationShutdown,
  Inject,
  Injectable,
  Logger,
  OnApplicationShutdown,
  OnModuleInit,
} from '@nestjs/common';
import IORedis, { Cluster, ReplyError, type RedisOptions } from 'ioredis';
import { MODULE_OPTIONS_TOKEN } from '../queue.module-definition';
import { QueueSettings } from '../queue.settings';
import { QueueConnectionError, QueueError } from '../errors';
import { describeError } from '../utils/errors';
import {
  evictionRefused,
  notRedisUrl,
  refusedAtStartup,
  scriptsRefused,
  subscribeRefused,
  unreachableAtStartup,
} from './redis.messages';
import { RepeatedFailure } from '../utils/repeated-failure';
import { waitOrTimeout } from '../utils/timers';
import type { ClusterConnection, QueueConnection, QueueModuleOptions, SubscriberHealthDetails } from '../interfaces';
import { Scripts, type RedisClient } from './scripts';
import { ServerClock } from './server-clock';
import { describeConnectionFailure } from './connection-failure';
import { SUBSCRIBER_PING_DEADLINE_MS, SubscriberHeartbeat } from './subscriber-heartbeat';
import { CommandSupervisor } from './command-supervisor';
import { createMemoryClient, isMemoryUrl } from '../memory/memory-instances';
import { memoryWarning } from '../memory/memory.messages';

function isClient(value: unknown): value is RedisClient {
  return value instanceof IORedis || value instanceof Cluster;
}

/** A Redis error reply (NOPERM, WRONGTYPE, ...): Redis answered, so waiting for it would not help. */
function isReply(error: unknown): boolean {
  return error instanceof ReplyError;
}

/** Idle time before the first TCP keepalive probe: under the idle timeouts of common NATs and load balancers (≥ 60 s). */
const KEEPALIVE_MS = 15_000;

function createClient(connection: Exclude<QueueConnection, RedisClient>, settings: QueueSettings): RedisClient {
  // Auto-pipelining batches the commands of one event-loop tick into one write: reads, acknowledgements
  // and other small calls share round trips without any code of ours (pushes, task writes and claims
  // gather themselves and leave at once: Scripts.runNow). Lazy: an application that fails to start
  // before its first command leaves no socket open.
  const shared = { enableAutoPipelining: true, lazyConnect: true };
  // TCP keepalive probes keep a NAT's or load balancer's idle timer from dropping the flow, and notice
  // a peer that is gone (no ACK) about 25 s after the last traffic. ioredis' default (0) turns
  // SO_KEEPALIVE on with the system's first probe after 2 hours; a number of ms sets TCP_KEEPIDLE (whole
  // seconds), and Node 20 on Linux (libuv 1.46) adds a probe every second, 10 before the socket fails.
  // A Redis that still ACKs but never answers (a userland proxy that stopped forwarding) is the PING's
  // business: see SubscriberHeartbeat.
  const keepAlive = { keepAlive: KEEPALIVE_MS };
  // ioredis' own defaults queue calls without limit while Redis is away and resend unanswered ones
  // after a reconnect. A timeout bounds every call, queued or sent. No retries per request: a call
  // queued while disconnected fails at the next failed connection attempt (within ~2 s of backoff)
  // instead of piling up, and a call whose reply was lost fails rather than being sent again, since
  // a script that ran before the connection dropped would then run twice (a push stored twice, a
  // shift applied twice). Reconnection attempts come more often than calls time out: a call that
  // timed out would stay queued in ioredis and be sent on reconnection, after its caller was told it
  // failed; flushed at a failed attempt first, a call rejected while Redis is away is never applied.
  const bounded: RedisOptions = {
    commandTimeout: settings.commandTimeoutMs,
    connectTimeout: settings.commandTimeoutMs,
    maxRetriesPerRequest: 0,
    retryStrategy: (attempt) => Math.min(attempt * 50, 2000, Math.floor(settings.commandTimeoutMs / 2)),
  };
  // memory://: the same client and options, connected to an instance in this process instead of a socket.
  if (isMemoryUrl(connection)) return createMemoryClient(connection, { ...shared, ...bounded });
  if (typeof connection === 'string') return new IORedis(connection, { ...shared, ...keepAlive, ...bounded });
  if ('cluster' in connection) {
    // Cluster nodes never retry by themselves (ioredis closes them and re-routes after a slot refresh).
    const { options } = connection as ClusterConnection;
    const nodeTimeouts = {
      ...keepAlive,
      commandTimeout: settings.commandTimeoutMs,
      connectTimeout: settings.commandTimeoutMs,
    };
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

function checkUrl(connection: QueueConnection): void {
  if (typeof connection !== 'string' || REDIS_URL.test(connection) || isMemoryUrl(connection)) return;
  const scheme = ANY_URL.exec(connection)?.[1];
  if (scheme === undefined) return;
  throw notRedisUrl(describeTarget(connection), scheme);
}

/** A server's `maxmemory-policy`. */
export interface EvictionPolicy {
  /** Where it was read: the configured address, or a Cluster master's `host:port`. */
  server: string;
  policy: string;
}

/** Policies under which Redis deletes keys when memory is full, and what that does to queued work. */
function evictionMessage(evicting: EvictionPolicy[]): string {
  const where = evicting.map(({ server, policy }) => `${policy} at ${server}`).join(', ');
  return (
    `Redis evicts keys when it reaches maxmemory (maxmemory-policy ${where}). Evicted keys lose queued work silently: ` +
    "a group's messages or a task's payload can go while its index entry stays (or the reverse), so acknowledged " +
    'pushes and schedules are never delivered and stats() drift. ' +
    'Set maxmemory-policy noeviction (CONFIG SET maxmemory-policy noeviction, and in redis.conf): a full Redis then ' +
    'refuses writes with QueueMemoryError and loses nothing'
  );
}

/** Where Redis is, for log lines: never the password. */
function describeTarget(connection: QueueConnection): string {
  if (typeof connection === 'string') {
    try {
      const url = new URL(connection);
      if (url.password) url.password = '***';
      return url.toString();
    } catch {
      return 'the configured Redis URL';
    }
  }
  if (isClient(connection)) return 'the Redis client given as connection';
  if ('cluster' in connection)
    return `the cluster ${connection.cluster.map((node) => (typeof node === 'object' ? `${node.host ?? '127.0.0.1'}:${node.port ?? 6379}` : String(node))).join(', ')}`;
  const { host = '127.0.0.1', port = 6379, path } = connection as RedisOptions;
  return path ?? `${host}:${port}`;
}

/** What a client emits when its connection (a Cluster: one of its nodes') closes. */
const DROPPED_EVENTS = ['close', '-node'];

/** Writes a producer accepted and has not settled yet (buffered pushes), finished before the connections close. */
export interface HeldWrites {
  /** Sends what is held and resolves once every call has settled, writes accepted meanwhile included. */
  drain(): Promise<void>;
  /** Refuses writes from now on and settles those still held, as not sent. */
  close(): void;
}

/**
 * The application's Redis: one command connection shared by every queue, plus a subscriber
 * connection opened only when a consumer listens for wake-up hints.
 */
@Injectable()
export class RedisConnection implements OnModuleInit, BeforeApplicationShutdown, OnApplicationShutdown {
  readonly client: RedisClient;
  readonly scripts: Scripts;
  /** This process' estimate of Redis' clock, fed by every queue's and consumer's replies. */
  readonly clock = new ServerClock();
  private readonly owned: boolean;
  private readonly target: string;
  /** Replaces a command connection of ours that stops answering (a client given as `connection` is its owner's). */
  private readonly supervisor?: CommandSupervisor;
  private subscriber?: RedisClient;
  private heartbeat?: SubscriberHeartbeat;
  /** Times the subscriber was dropped for not answering its PING. */
  private subscriberRestarts = 0;
  /** Since when the subscriber has not answered (a PING missed its deadline, and none answered since). */
  private stalledSince?: number;
  private readonly listeners = new Map<string, Set<(message: string) => void>>();
  private readonly resyncs = new Set<() => void>();
  private readonly logger = new Logger('QueueModule');
  /**
   * The command connection's last error since it was last ready, to say why Redis is unreachable (a
   * flushed call only says that it was).
   */
  private lastError?: Error;
  private warnedUnreachable = false;
  /** When connections are dropped rather than waited on: the shutdown budget's end (`beforeApplicationShutdown`). */
  private closeBy = Infinity;
  /** Start-up checks Redis could not run yet (`startup: 'continue'`), run when it answers. */
  private readonly deferred: { what: string; check: () => Promise<void> }[] = [];
  private readonly heldWrites = new Set<HeldWrites>();
  private readonly droppedListeners = new Set<() => void>();
  private readonly dropped = () => this.droppedListeners.forEach((listener) => listener());

  constructor(
    @Inject(MODULE_OPTIONS_TOKEN) options: QueueModuleOptions,
    private readonly settings: QueueSettings,
  ) {
    const connection = options.connection;
    checkUrl(connection);
    this.owned = !isClient(connection);
    this.target = describeTarget(connection);
    this.client = isClient(connection) ? connection : createClient(connection, settings);
    if (this.owned) this.supervisor = new CommandSupervisor(this.client, this.logger);
    this.scripts = new Scripts(
      this.client,
      settings.commandTimeoutMs,
      () => this.lastError,
      (ms) => this.supervisor?.allowSilence(ms),
    );
    if (this.owned) this.watch(this.client, 'Redis');
    this.supervisor?.start();
    if (isMemoryUrl(connection)) this.logger.warn(memoryWarning(this.target));
    // A Cluster's own 'close' comes only when all of it closes: a node's closing is its '-node'.
    for (const event of DROPPED_EVENTS) this.client.on(event, this.dropped);
  }

  /**
   * Start-up is where Redis is first needed (queues check their stored shard count next). With
   * `startup: 'fail'` an unreachable Redis stops the application here, with the reason.
   */
  async onModuleInit(): Promise<void> {
    if (this.settings.startup === 'continue') {
      this.client.once('ready', () => void this.checkEvictionPolicy(false));
      return;
    }
    try {
      await this.client.ping();
    } catch (error) {
      // Denied PING alone says nothing about the calls that matter; those are checked next.
      if (isReply(error) && (error as Error).message.startsWith('NOPERM')) return;
      const refused = isReply(error)
        ? refusedAtStartup(this.target, (error as Error).message, error)
        : unreachableAtStartup(this.target, this.reason(error), error);
      this.logger.error(refused.message);
      if (this.owned) this.client.disconnect();
      throw refused;
    }
    await this.checkEvictionPolicy(true);
  }

  /**
   * `maxmemory-policy` of each server holding data (every master of a Cluster), from `INFO memory`,
   * which ACLs and managed services allow where `CONFIG GET` is refused.
   */
  async evictionPolicies(): Promise<EvictionPolicy[]> {
    const { client } = this;
    const servers = client instanceof Cluster ? client.nodes('master') : [client];
    return Promise.all(
      servers.map(async (server) => {
        const info = await this.scripts.call(() => server.info('memory'));
        return {
          server: client instanceof Cluster ? `${server.options.host}:${server.options.port}` : this.target,
          policy: /^maxmemory_policy:(\S+)/m.exec(info)?.[1] ?? 'unknown',
        };
      }),
    );
  }

  /**
   * Warns about (or, with `evictionPolicy: 'fail'`, refuses to start on) a Redis that deletes keys when
   * memory is full. `atStartup`: false once the application runs (`startup: 'continue'`, Redis came
   * later), when failing is what that mode was asked not to do: then it is logged as an error.
   */
  private async checkEvictionPolicy(atStartup: boolean): Promise<void> {
    const strict = this.settings.evictionPolicy === 'fail';
    let message: string;
    try {
      const evicting = (await this.evictionPolicies()).filter(({ policy }) => policy !== 'noeviction');
      if (evicting.length === 0) return;
      message = evictionMessage(evicting);
    } catch (error) {
      message =
        `Could not read Redis' maxmemory-policy (${describeError(error)}); it must be noeviction, or queued work ` +
        'can be evicted silently (an ACL user needs INFO for this check)';
    }
    if (!strict) {
      this.logger.warn(`${message}. evictionPolicy: 'fail' refuses to start instead of this warning`);
      return;
    }
    this.logger.error(
      `${message}. ${atStartup ? 'The application does not start' : 'Found after start-up'} (evictionPolicy: 'fail')`,
    );
    if (!atStartup) return;
    if (this.owned) this.client.disconnect();
    throw evictionRefused(message);
  }

  /**
   * Runs a start-up check against Redis (a queue's stored kind and shard count): the first calls a
   * queue makes are where a misconfigured ACL user or an unreachable Redis shows up, so their failures
   * are explained here. A QueueError the check throws (a mismatch) fails start-up. With
   * `startup: 'continue'`, a check that cannot run while Redis is away runs once Redis answers; a
   * problem found then is logged, since failing start-up is what that mode was asked not to do.
   */
  async whenReady(what: string, check: () => Promise<void>): Promise<void> {
    try {
      await check();
    } catch (error) {
      if (isReply(error)) throw this.explainRefusal(error as Error);
      if (!(error instanceof QueueConnectionError)) throw error;
      if (this.settings.startup !== 'continue') throw error;
      this.warnUnreachable(error);
      if (this.deferred.push({ what, check }) === 1) this.client.once('ready', () => void this.runDeferred());
    }
  }

  private async runDeferred(): Promise<void> {
    for (const { what, check } of this.deferred.splice(0)) {
      try {
        await check();
      } catch (error) {
        this.logger.error(
          error instanceof QueueError && !(error instanceof QueueConnectionError)
            ? error.message
            : `Could not check ${what} against Redis after it came back: ${describeError(error)}`,
        );
      }
    }
  }

  private explainRefusal(error: Error): Error {
    if (!error.message.startsWith('NOPERM')) return error;
    return scriptsRefused(error.message, this.settings.prefix, error);
  }

  /**
   * Calls `listener` whenever the command connection (a Cluster: one of its nodes') closes: what was
   * written before may not have been read by anyone, and a server that restarts may come back empty.
   */
  onDropped(listener: () => void): void {
    this.droppedListeners.add(listener);
  }

  /** Registers writes to send before the connections close: a push accepted before `app.close()` is written. */
  holdsWrites(writes: HeldWrites): void {
    this.heldWrites.add(writes);
  }

  /** Listens on a pub/sub channel; the returned function stops listening. */
  /**
   * Listens on a pub/sub channel; resolves with the function that stops listening. `missed` is called
   * each time the subscriber connects again: messages published meanwhile were lost.
   */
  async subscribe(channel: string, listener: (message: string) => void, missed?: () => void): Promise<() => void> {
    let set = this.listeners.get(channel);
    if (!set) {
      set = new Set();
      this.listeners.set(channel, set);
      try {
        await this.subscriberClient().subscribe(channel);
      } catch (error) {
        if (isReply(error)) {
          throw subscribeRefused(channel, (error as Error).message, this.settings.prefix, error);
        }
        // Wake-ups are only hints: consumers poll meanwhile, and every channel is subscribed again on (re)connect.
        this.logger.warn(`Could not subscribe to "${channel}" yet (${this.reason(error)}); will when Redis answers`);
      }
    }
    set.add(listener);
    if (missed) this.resyncs.add(missed);
    return () => {
      set.delete(listener);
      if (missed) this.resyncs.delete(missed);
    };
  }

  /** Has every consumer poll all its shards now (the memory clock moved: what fell due is theirs to take). */
  wakeConsumers(): void {
    this.resyncs.forEach((resync) => resync());
  }

  private subscriberClient(): RedisClient {
    if (!this.subscriber) {
      // ioredis only resubscribes channels whose SUBSCRIBE once succeeded; one sent while Redis was
      // away would be lost, so every (re)connection subscribes to all of them. ioredis' own
      // resubscription is turned off: it handles no rejection, so a connection dropped again before
      // its reply (a link that is still dead) would crash the process with an unhandled rejection.
      const subscriber = (
        this.client instanceof Cluster ? this.client.duplicate() : this.client.duplicate({ autoResubscribe: false })
      ) as RedisClient;
      this.watch(subscriber, 'Redis subscriber');
      subscriber.on('ready', () => {
        const channels = [...this.listeners.keys()];
        if (channels.length === 0) return;
        subscriber.subscribe(...channels).then(
          // Hints published before it was subscribed are lost (while it was away, or before its first
          // connection: what a start-up without Redis declared once it came): those listening look for
          // themselves, once subscribed (so that none published after their look is missed).
          () => this.resyncs.forEach((resync) => resync()),
          (error: Error) => this.logger.warn(`Redis subscriber: ${error.message}`),
        );
      });
      const heartbeat = new SubscriberHeartbeat({
        ping: () => subscriber.ping().then(() => this.answered()),
        ready: () => subscriber.status === 'ready',
        stalled: () => this.restartSubscriber(subscriber as IORedis),
      });
      subscriber.on('ready', () => heartbeat.replied());
      subscriber.on('message', (channel: string, message: string) => {
        heartbeat.replied();
        for (const listener of this.listeners.get(channel) ?? []) listener(message);
      });
      // A Cluster subscribes on a connection of its own that it does not expose: a PING would go to
      // another node and prove nothing about it. Its liveness is ioredis' (and TCP keepalive's).
      if (subscriber instanceof IORedis) heartbeat.start();
      this.heartbeat = heartbeat;
      this.subscriber = subscriber;
    }
    return this.subscriber;
  }

  /**
   * The subscriber is open and silent: whatever was published since it last answered was lost, and
   * ioredis would wait on it until TCP gives up, which is never while something on the way still
   * acknowledges packets (a proxy that stopped forwarding). Consumers look for themselves now, the
   * socket is destroyed (ending it politely would wait for a FIN that may never come), and ioredis
   * connects and subscribes again, after which they look once more. Logged once per outage, however
   * many reconnections it takes.
   */
  private restartSubscriber(subscriber: IORedis): void {
    this.subscriberRestarts++;
    if (this.stalledSince === undefined) {
      this.stalledSince = Date.now();
      const age = this.heartbeat?.lastReplyAgoMs;
      this.logger.warn(
        `Redis subscriber: no reply to PING within ${SUBSCRIBER_PING_DEADLINE_MS} ms` +
          `${age === undefined ? '' : ` (last reply ${Math.round(age / 100) / 10} s ago)`}; reconnecting it. ` +
          'Wake-up hints may have been lost: consumers poll every shard now',
      );
    }
    this.resyncs.forEach((resync) => resync());
    subscriber.stream?.destroy();
  }

  private answered(): void {
    if (this.stalledSince === undefined) return;
    const silentMs = Date.now() - this.stalledSince;
    this.stalledSince = undefined;
    this.logger.log(
      `Redis subscriber: answering again (after ${Math.round(silentMs / 100) / 10} s, ${this.subscriberRestarts} reconnection(s) so far)`,
    );
  }

  /** Times a command connection (a Cluster node's) was replaced for silence since start-up. */
  commandRestarts(): number {
    return this.supervisor?.restarts ?? 0;
  }

  /** The wake-up channel's connection, for health: undefined until a consumer subscribes. */
  subscriberStatus(): SubscriberHealthDetails | undefined {
    const { subscriber, heartbeat } = this;
    if (!subscriber || !heartbeat) return undefined;
    const state: SubscriberHealthDetails['state'] =
      this.stalledSince !== undefined ? 'stalled' : subscriber.status === 'ready' ? 'connected' : 'reconnecting';
    const lastReplyAgeMs = heartbeat.lastReplyAgoMs;
    return { state, ...(lastReplyAgeMs !== undefined && { lastReplyAgeMs }), restarts: this.subscriberRestarts };
  }

  /**
   * Logs a client's errors and its recovery (of clients the module opened: a caller's client is the
   * caller's to watch). A reconnecting client fails every attempt: the first error is logged, then a
   * count at most every 10 s, then the recovery.
   */
  private watch(client: RedisClient, label: string): void {
    const failure = new RepeatedFailure({
      first: (error) => this.logger.warn(`${label}: ${error}`),
      summary: (count, sinceMs, last) =>
        this.logger.warn(
          `${label}: still failing after ${Math.round(sinceMs / 1000)} s (${count} more errors since the last line; last: ${last})`,
        ),
      recovered: (count, sinceMs) =>
        this.logger.log(
          `${label}: connected again to ${this.target} (after ${count} errors over ${Math.round(sinceMs / 1000)} s)`,
        ),
    });
    const command = client === this.client;
    client.on('error', (error: Error) => {
      if (command) this.lastError = error;
      failure.failed(describeConnectionFailure(error));
    });
    client.on('ready', () => {
      if (command) this.lastError = undefined;
      failure.succeeded();
    });
  }

  /** Why a call failed for want of Redis, in the library's words (for health, which calls the client itself). */
  describeFailure(error: unknown): string {
    return describeConnectionFailure(error, this.lastError);
  }

  private warnUnreachable(error: unknown): void {
    if (this.warnedUnreachable) return;
    this.warnedUnreachable = true;
    this.logger.warn(
      `Redis at ${this.target} is unreachable at start-up (${this.reason(error)}); starting anyway (startup: 'continue'): ` +
        'calls fail until it answers, consumers keep retrying, and queues check their shard count once it does',
    );
  }

  private reason(error: unknown): string {
    return describeConnectionFailure(this.lastError ?? error);
  }

  /**
   * Shutdown has one budget, `shutdownTimeoutMs` + `commandTimeoutMs`, from the moment it begins:
   * running handlers get the first part, handing back their unfinished work and closing the
   * connections share what is left (QueueOrchestrator works to the same deadline).
   */
  beforeApplicationShutdown(): void {
    this.closeBy = Date.now() + this.settings.shutdownTimeoutMs + this.settings.commandTimeoutMs;
  }

  /** Closes what a failed start-up opened: the application may never be closed after it. */
  async abandon(): Promise<void> {
    await this.onApplicationShutdown();
  }

  async onApplicationShutdown(): Promise<void> {
    // Closed outside an app shutdown (a start-up that failed): one command's time to say goodbye.
    const closeBy = Number.isFinite(this.closeBy) ? this.closeBy : Date.now() + this.settings.commandTimeoutMs;
    // Every other hook of the shutdown has run (handlers finished, and with them their pushes): what
    // producers still hold goes now, before QUIT, after which a write would not be run.
    for (const event of DROPPED_EVENTS) this.client.off(event, this.dropped);
    const held = [...this.heldWrites];
    await waitOrTimeout(Promise.all(held.map((writes) => writes.drain())), Math.max(0, closeBy - Date.now()));
    for (const writes of held) writes.close();
    const budgetMs = Math.max(0, closeBy - Date.now());
    const closing: Promise<void>[] = [];
    this.supervisor?.stop();
    this.heartbeat?.stop();
    if (this.subscriber) closing.push(close(this.subscriber, budgetMs));
    if (this.owned) closing.push(close(this.client, budgetMs));
    await Promise.all(closing);
  }
}

/**
 * QUIT lets replies still in flight arrive, for as long as the shutdown budget allows; then the
 * connection is dropped (a frozen Redis never answers QUIT). A client that is not connected is dropped
 * at once: QUIT would resolve and leave ioredis reconnecting in the background.
 */
async function close(client: RedisClient, budgetMs: number): Promise<void> {
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
