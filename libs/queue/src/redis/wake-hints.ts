import type { HeldWrites, RedisConnection } from './redis-connection';
import type { RedisClient } from './scripts';

/** A hint as it travels: the shard, and the server time its work falls due (0: now). */
export interface WakeHint {
  shard: number;
  at: number;
}

/**
 * The wake-up hints of one queue in this process: `"<shard>:<server ms>"` published on the queue's
 * channel whenever work becomes available to consumers that may be asleep (up to `idlePollMs`) in any
 * process, by producers and consumers alike. Only a latency hint: a lost one costs a poll at
 * `idlePollMs` at most, and a subscriber that reconnects makes its consumers look at once.
 * A hint is skipped when this process sent one for an earlier or equal time that is still ahead (a
 * consumer woken by it reads the shard's next due time from its poll, which covers this one too), and
 * when its work falls due after `idlePollMs` (every sleeping consumer looks by then). That rests on the
 * earlier hint's poll finding this work, so it no longer holds once a hint failed or the connection
 * closed: a consumer may have polled early (after an error, or its subscriber reconnecting), found
 * nothing in a Redis that restarted empty, and gone back to sleep. Hints on their
 * way are sent before the connection closes (QUIT would overtake one queued behind other commands), so
 * that work given back at shutdown is announced.
 */
export class WakeHints implements HeldWrites {
  /** Per shard, the time of the last hint sent that may still be ahead (server ms). */
  private readonly sent: number[];
  private readonly sending = new Set<Promise<unknown>>();

  constructor(
    private readonly client: RedisClient,
    readonly channel: string,
    shards: number,
    private readonly idlePollMs: number,
  ) {
    this.sent = new Array<number>(shards).fill(-1);
  }

  /** A queue's hints on `connection`, sent before it closes. */
  static of(connection: RedisConnection, channel: string, shards: number, idlePollMs: number): WakeHints {
    const hints = new WakeHints(connection.client, channel, shards, idlePollMs);
    connection.holdsWrites(hints);
    connection.onDropped(() => hints.forget());
    return hints;
  }

  /** A hint as the channel carries it; `parse` reads it back. */
  static format({ shard, at }: WakeHint): string {
    return `${shard}:${at}`;
  }

  /** Reads a hint; undefined for a message that is not one. */
  static parse(message: string): WakeHint | undefined {
    const colon = message.indexOf(':');
    const shard = Number(message.slice(0, colon));
    const at = Number(message.slice(colon + 1));
    return colon > 0 && Number.isInteger(shard) && Number.isFinite(at) ? { shard, at } : undefined;
  }

  /** Work in `shard` falls due at `at` (server ms), Redis' clock reading `serverNow`. */
  publish(shard: number, at: number, serverNow: number): void {
    if (at - serverNow >= this.idlePollMs) return;
    const sent = this.sent[shard];
    if (sent > serverNow && sent <= at) return;
    this.send(shard, at);
  }

  /** Work in `shard` is due now, whatever the clock says. */
  now(shard: number): void {
    this.send(shard, 0);
  }

  /** Hints sent so far may not have woken anyone: the next one of each shard is sent, whatever its time. */
  forget(): void {
    this.sent.fill(-1);
  }

  async drain(): Promise<void> {
    await Promise.all(this.sending);
  }

  close(): void {
    // Nothing is held back: a hint sent after this fails like any call on a closed connection.
  }

  private send(shard: number, at: number): void {
    this.sent[shard] = at;
    const sending = this.client.publish(this.channel, WakeHints.format({ shard, at })).catch(() => {
      // Only a latency hint: consumers still poll by themselves. The next one is not skipped for it.
      if (this.sent[shard] === at) this.sent[shard] = -1;
    });
    this.sending.add(sending);
    void sending.finally(() => this.sending.delete(sending));
  }
}
