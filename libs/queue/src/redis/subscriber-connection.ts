import type { Logger } from '@nestjs/common';
import IORedis, { Cluster, ReplyError } from 'ioredis';
import type { SubscriberHealthDetails } from '../interfaces';
import { closeClient, type RedisClient } from './redis-client';
import { subscribeRefused } from './redis.messages';
import { SUBSCRIBER_PING_DEADLINE_MS, SubscriberHeartbeat } from './subscriber-heartbeat';

/** What the subscriber needs of the connection that opens it. */
export interface SubscriberHost {
  /** The command connection, duplicated for pub/sub. */
  client: RedisClient;
  logger: Logger;
  /** The key prefix, for the ACL advice of a refused SUBSCRIBE. */
  prefix: string;
  /** Logs a client's errors and recovery under `label`. */
  watch(client: RedisClient, label: string): void;
  /** Why Redis cannot be reached, in the library's words. */
  reason(error: unknown): string;
}

/**
 * The wake-up channels' connection, opened when a consumer first listens: every channel subscribed
 * again on each (re)connection, and replaced when it stops answering its PING.
 */
export class SubscriberConnection {
  private subscriber?: RedisClient;
  private heartbeat?: SubscriberHeartbeat;
  /** Times the subscriber was dropped for not answering its PING. */
  private restarts = 0;
  /** Since when the subscriber has not answered (a PING missed its deadline, and none answered since). */
  private stalledSince?: number;
  private readonly listeners = new Map<string, Set<(message: string) => void>>();
  private readonly resyncs = new Set<() => void>();

  constructor(private readonly host: SubscriberHost) {}

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
        await this.client().subscribe(channel);
      } catch (error) {
        if (error instanceof ReplyError)
          throw subscribeRefused(channel, (error as Error).message, this.host.prefix, error);
        // Wake-ups are only hints: consumers poll meanwhile, and every channel is subscribed again on (re)connect.
        this.host.logger.warn(
          `Could not subscribe to "${channel}" yet (${this.host.reason(error)}); will when Redis answers`,
        );
      }
    }
    set.add(listener);
    if (missed) this.resyncs.add(missed);
    return () => {
      set.delete(listener);
      if (missed) this.resyncs.delete(missed);
    };
  }

  /** Has every listener look for itself now (what it may have missed is its to find). */
  resync(): void {
    this.resyncs.forEach((resync) => resync());
  }

  /** The connection's state, for health: undefined until a consumer subscribes. */
  status(): SubscriberHealthDetails | undefined {
    const { subscriber, heartbeat } = this;
    if (!subscriber || !heartbeat) return undefined;
    const state: SubscriberHealthDetails['state'] =
      this.stalledSince !== undefined ? 'stalled' : subscriber.status === 'ready' ? 'connected' : 'reconnecting';
    const lastReplyAgeMs = heartbeat.lastReplyAgoMs;
    return { state, ...(lastReplyAgeMs !== undefined && { lastReplyAgeMs }), restarts: this.restarts };
  }

  async close(budgetMs: number): Promise<void> {
    this.heartbeat?.stop();
    if (this.subscriber) await closeClient(this.subscriber, budgetMs);
  }

  private client(): RedisClient {
    if (!this.subscriber) {
      const { client, watch, logger } = this.host;
      // ioredis only resubscribes channels whose SUBSCRIBE once succeeded; one sent while Redis was
      // away would be lost, so every (re)connection subscribes to all of them. ioredis' own
      // resubscription is turned off: it handles no rejection, so a connection dropped again before
      // its reply (a link that is still dead) would crash the process with an unhandled rejection.
      const subscriber = (
        client instanceof Cluster ? client.duplicate() : client.duplicate({ autoResubscribe: false })
      ) as RedisClient;
      watch(subscriber, 'Redis subscriber');
      subscriber.on('ready', () => {
        const channels = [...this.listeners.keys()];
        if (channels.length === 0) return;
        subscriber.subscribe(...channels).then(
          // Hints published before it was subscribed are lost (while it was away, or before its first
          // connection: what a start-up without Redis declared once it came): those listening look for
          // themselves, once subscribed (so that none published after their look is missed).
          () => this.resync(),
          (error: Error) => logger.warn(`Redis subscriber: ${error.message}`),
        );
      });
      const heartbeat = new SubscriberHeartbeat({
        ping: () => subscriber.ping().then(() => this.answered()),
        ready: () => subscriber.status === 'ready',
        stalled: () => this.restart(subscriber as IORedis),
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
  private restart(subscriber: IORedis): void {
    this.restarts++;
    if (this.stalledSince === undefined) {
      this.stalledSince = Date.now();
      const age = this.heartbeat?.lastReplyAgoMs;
      this.host.logger.warn(
        `Redis subscriber: no reply to PING within ${SUBSCRIBER_PING_DEADLINE_MS} ms` +
          `${age === undefined ? '' : ` (last reply ${Math.round(age / 100) / 10} s ago)`}; reconnecting it. ` +
          'Wake-up hints may have been lost: consumers poll every shard now',
      );
    }
    this.resync();
    subscriber.stream?.destroy();
  }

  private answered(): void {
    if (this.stalledSince === undefined) return;
    const silentMs = Date.now() - this.stalledSince;
    this.stalledSince = undefined;
    this.host.logger.log(
      `Redis subscriber: answering again (after ${Math.round(silentMs / 100) / 10} s, ${this.restarts} reconnection(s) so far)`,
    );
  }
}
