import { QueueConnectionError } from '../errors';
import { memoryBackendOf } from './memory-backend';
import type { HeldWrites, RedisConnection } from './redis-connection';
import type { RedisClient } from './redis-client';
import type { ServerClock } from './server-clock';

/** Pause between hints for writes of unknown outcome while Redis does not answer them (`unsure`). */
const UNSURE_RETRY_MS = 1000;

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
 * A write whose outcome is unknown (no reply in time) may still be applied when Redis answers again,
 * with no reply to send its hint on: such a shard gets a hint due now, sent behind the write on the same
 * connection and sent again every UNSURE_RETRY_MS until Redis answers one (`unsure`).
 */
export class WakeHints implements HeldWrites {
  /** Per shard, the time of the last hint sent that may still be ahead (server ms). */
  private readonly sent: number[];
  private readonly sending = new Set<Promise<unknown>>();
  /** Shards written by a call of unknown outcome whose hint Redis has not answered yet. */
  private readonly unsureShards = new Set<number>();
  /** A round of those hints, or the pause after one Redis did not answer, is under way. */
  private unsureBusy = false;
  private unsureTimer?: NodeJS.Timeout;
  private closed = false;

  constructor(
    private readonly client: RedisClient,
    readonly channel: string,
    shards: number,
    private readonly idlePollMs: number,
    /** Its clock: one that stands still gets every hint, since no poll at `idlePollMs` comes by itself. */
    private readonly clock?: Pick<ServerClock, 'still'>,
    /** On `memory://`, the instance's PUBLISH run in-process: a hint then costs no round trip. */
    private readonly publishNow?: (channel: string, message: string) => void,
  ) {
    this.sent = new Array<number>(shards).fill(-1);
  }

  /** A queue's hints on `connection`, sent before it closes. */
  static of(connection: RedisConnection, channel: string, shards: number, idlePollMs: number): WakeHints {
    const memory = memoryBackendOf(connection.client);
    const hints = new WakeHints(connection.client, channel, shards, idlePollMs, connection.clock, memory?.publish);
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
    if (at - serverNow >= this.idlePollMs && !this.clock?.still) return;
    const sent = this.sent[shard];
    if (sent > serverNow && sent <= at) return;
    this.send(shard, at);
  }

  /** Work in `shard` is due now, whatever the clock says. */
  now(shard: number): void {
    this.send(shard, 0);
  }

  /**
   * `write` to `shard`, as it settles; if Redis did not answer it (outcome unknown), it may be applied
   * later, so the shard's consumers are woken once Redis answers again.
   */
  async after<R>(shard: number, write: Promise<R>): Promise<R> {
    try {
      return await write;
    } catch (error) {
      if (error instanceof QueueConnectionError && error.outcome === 'unknown') this.unsure(shard);
      throw error;
    }
  }

  /**
   * A write to `shard` may be applied without this process hearing of it: a hint due now goes behind it
   * (on the same connection, so Redis runs it after the write), again each UNSURE_RETRY_MS until one is
   * answered. In a Cluster the hint goes to another node than the write, so it may overtake it: a
   * consumer woken too early polls again by `idlePollMs`.
   */
  unsure(shard: number): void {
    if (this.closed) return;
    this.unsureShards.add(shard);
    if (!this.unsureBusy) this.sendUnsure();
  }

  /** Hints sent so far may not have woken anyone: the next one of each shard is sent, whatever its time. */
  forget(): void {
    this.sent.fill(-1);
  }

  async drain(): Promise<void> {
    await Promise.all(this.sending);
  }

  close(): void {
    // Nothing else is held back: a hint sent after this fails like any call on a closed connection.
    this.closed = true;
    clearTimeout(this.unsureTimer);
    this.unsureTimer = undefined;
    this.unsureShards.clear();
  }

  private sendUnsure(): void {
    this.unsureBusy = true;
    this.unsureTimer = undefined;
    const shards = [...this.unsureShards];
    this.unsureShards.clear();
    const round = Promise.all(
      shards.map((shard) => this.client.publish(this.channel, WakeHints.format({ shard, at: 0 }))),
    );
    void round.then(
      () => this.nextUnsure(0),
      () => {
        for (const shard of shards) this.unsureShards.add(shard);
        this.nextUnsure(UNSURE_RETRY_MS);
      },
    );
  }

  private nextUnsure(delayMs: number): void {
    if (this.closed || this.unsureShards.size === 0) {
      this.unsureBusy = false;
      return;
    }
    if (delayMs === 0) return this.sendUnsure();
    this.unsureTimer = setTimeout(() => this.sendUnsure(), delayMs);
    this.unsureTimer.unref();
  }

  private send(shard: number, at: number): void {
    this.sent[shard] = at;
    if (this.publishNow) {
      if (!this.closed) this.publishNow(this.channel, WakeHints.format({ shard, at }));
      return;
    }
    const sending = this.client.publish(this.channel, WakeHints.format({ shard, at })).catch(() => {
      // Only a latency hint: consumers still poll by themselves. The next one is not skipped for it.
      if (this.sent[shard] === at) this.sent[shard] = -1;
    });
    this.sending.add(sending);
    void sending.finally(() => this.sending.delete(sending));
  }
}
