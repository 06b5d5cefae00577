import {
  BeforeApplicationShutdown,
  Inject,
  Injectable,
  Logger,
  OnApplicationShutdown,
  OnModuleInit,
} from '@nestjs/common';
import { Cluster, ReplyError } from 'ioredis';
import { QueueSettings } from '../queue.settings';
import { QueueConnectionError, QueueError } from '../errors';
import { describeError } from '../utils/errors';
import {
  evictionMessage,
  evictionRefused,
  refusedAtStartup,
  scriptsRefused,
  unreachableAtStartup,
} from './redis.messages';
import { RepeatedFailure } from '../utils/repeated-failure';
import { waitOrTimeout } from '../utils/timers';
import type { QueueModuleOptions, SubscriberHealthDetails } from '../interfaces';
import { Scripts } from './scripts';
import { ServerClock } from './server-clock';
import { describeConnectionFailure } from './connection-failure';
import { CommandSupervisor } from './command-supervisor';
import { checkUrl, closeClient, createClient, describeTarget, isClient, type RedisClient } from './redis-client';
import { SubscriberConnection } from './subscriber-connection';
import { isMemoryUrl, memoryBackendOf } from './memory-backend';
import { SentCalls, type CallingClient } from './sent-calls';

/**
 * The module's options as the connection reads them (only `connection`): the module provides them
 * under this token, so the Redis layer needs nothing of the module's definition.
 */
export const CONNECTION_OPTIONS = 'nrq:connection_options';

/** A Redis error reply (NOPERM, WRONGTYPE, ...): Redis answered, so waiting for it would not help. */
function isReply(error: unknown): boolean {
  return error instanceof ReplyError;
}

/** A server's `maxmemory-policy`. */
export interface EvictionPolicy {
  /** Where it was read: the configured address, or a Cluster master's `host:port`. */
  server: string;
  policy: string;
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
  private readonly sent: SentCalls;
  private readonly target: string;
  /** Replaces a command connection of ours that stops answering (a client given as `connection` is its owner's). */
  private readonly supervisor?: CommandSupervisor;
  private readonly logger = new Logger('QueueModule');
  private readonly subscriber: SubscriberConnection;
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
    @Inject(CONNECTION_OPTIONS) options: Pick<QueueModuleOptions, 'connection'>,
    private readonly settings: QueueSettings,
  ) {
    const connection = options.connection;
    checkUrl(connection);
    this.owned = !isClient(connection);
    this.target = describeTarget(connection);
    this.client = isClient(connection) ? connection : createClient(connection, settings.commandTimeoutMs);
    this.sent = SentCalls.of(this.client as unknown as CallingClient);
    if (this.owned) this.supervisor = new CommandSupervisor(this.client, this.logger);
    this.scripts = new Scripts(
      this.client,
      settings.commandTimeoutMs,
      () => this.lastError,
      (ms) => this.supervisor?.allowSilence(ms),
    );
    if (this.owned) this.watch(this.client, 'Redis');
    this.supervisor?.start();
    const memory = memoryBackendOf(this.client);
    if (memory && isMemoryUrl(connection)) this.logger.warn(memory.warning(this.target));
    // A memory clock that a test holds still is read, not estimated from replies (ServerClock says why).
    // One that follows the wall clock is estimated as a server's is, as the memory suites check.
    if (memory?.clock.still) this.clock.follow(memory.clock);
    this.subscriber = new SubscriberConnection({
      client: this.client,
      logger: this.logger,
      prefix: settings.prefix,
      watch: (client, label) => this.watch(client, label),
      reason: (error) => this.reason(error),
    });
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

  /**
   * Listens on a pub/sub channel; resolves with the function that stops listening. `missed` is called
   * each time the subscriber connects again: messages published meanwhile were lost.
   */
  subscribe(channel: string, listener: (message: string) => void, missed?: () => void): Promise<() => void> {
    return this.subscriber.subscribe(channel, listener, missed);
  }

  /** Has every consumer poll all its shards now (the memory clock moved: what fell due is theirs to take). */
  wakeConsumers(): void {
    this.subscriber.resync();
  }

  /**
   * Calls of the command connection sent (or held until it connects) and not answered yet, counted as
   * they leave: ioredis keeps its own queues private.
   */
  callsWaiting(): number {
    return this.sent.count;
  }

  /** Times a command connection (a Cluster node's) was replaced for silence since start-up. */
  commandRestarts(): number {
    return this.supervisor?.restarts ?? 0;
  }

  /** The wake-up channel's connection, for health: undefined until a consumer subscribes. */
  subscriberStatus(): SubscriberHealthDetails | undefined {
    return this.subscriber.status();
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
    this.supervisor?.stop();
    this.clock.close();
    const closing = [this.subscriber.close(budgetMs)];
    if (this.owned) closing.push(closeClient(this.client, budgetMs));
    await Promise.all(closing);
  }
}
