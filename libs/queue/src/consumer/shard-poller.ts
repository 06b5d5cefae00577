import type { ServerClock } from '../redis/server-clock';
import { ShardLoop, type PollResult } from './shard-loop';
import { Slots } from './slots';
import { waitOrTimeout } from '../utils/timers';

/** What one claim of a shard brought: what the shard loop learned, and the items to handle. */
export interface Claimed<I> {
  poll: PollResult;
  items: I[];
  /** Messages of groups discarded for age on the way (FixedQueue). */
  expired?: { group: string; count: number }[];
  /** Groups the claim paused because the lease of their last attempt ran out (FixedQueue, onExhausted 'pause-group'). */
  paused?: string[];
}

/** Why a process stops claiming for a consumer: `pauseConsumers`, or too many handlers past their deadline. */
export type HoldReason = 'paused' | 'overdue';

export interface ShardPollerOptions<I> {
  shards: number;
  clock: ServerClock;
  idlePollMs: number;
  concurrency: number;
  /**
   * `continuous`: each shard is polled again when its next work falls due (at most `idlePollMs`
   * later), or earlier on a hint. `scheduled`: a shard is polled only after `tick()` (or a hint of work
   * due by then), for as long as it has work due now, then sleeps until the next tick.
   */
  mode: 'continuous' | 'scheduled';
  /** Claims at most `limit` items of a shard (never more: the slots are already reserved). */
  claim(shard: number, limit: number): Promise<Claimed<I>>;
  /** Handles one claimed item in its slot; the slot is free once this settles, or once it calls `free`. */
  handle(shard: number, item: I, serverNow: number, free: () => void): Promise<void>;
  claimFailed(error: unknown): void;
}

/**
 * Polls every shard of one queue for one consumer: a loop per shard, all sharing one pool of
 * `concurrency` slots. It knows nothing of what is claimed: the consumer claims and handles.
 */
export class ShardPoller<I> {
  private readonly slots: Slots;
  private readonly loops: ShardLoop[];
  private stopped = false;
  /** Why this process holds the consumer back (its queue paused here, too many overdue handlers). */
  private readonly holds = new Set<HoldReason>();
  /** Set while any hold is: polls wait on it. */
  private held?: { until: Promise<void>; release: () => void };

  constructor(private readonly options: ShardPollerOptions<I>) {
    this.slots = new Slots(options.concurrency);
    const scheduled = options.mode === 'scheduled';
    this.loops = Array.from(
      { length: options.shards },
      (_, shard) =>
        new ShardLoop(
          () => this.poll(shard),
          options.clock,
          scheduled ? Infinity : options.idlePollMs,
          (error) => options.claimFailed(error),
          scheduled,
        ),
    );
  }

  get inFlight(): number {
    return this.slots.inFlight;
  }

  /** Whether a shard's poll is about to start (woken for work due now) or under way. */
  get polling(): boolean {
    return this.slots.inFlight > 0 || this.loops.some((loop) => loop.waking);
  }

  get isHeld(): boolean {
    return this.held !== undefined;
  }

  /** Whether this reason holds the consumer back now. */
  heldFor(reason: HoldReason): boolean {
    return this.holds.has(reason);
  }

  start(): void {
    for (const loop of this.loops) loop.start();
  }

  /** Every shard is polled now (scheduled mode: and again while it has work due). */
  tick(): void {
    for (const loop of this.loops) loop.hint(-Infinity);
  }

  /** Work may be due in this shard at this server time: poll it by then. */
  dueAt(shard: number, serverTime: number): void {
    this.loops[shard]?.hint(serverTime);
  }

  /**
   * Stops claiming, then waits (at most `timeoutMs`) for the polls and handlers under way. False when
   * handlers were still running at the deadline.
   */
  async stop(timeoutMs: number): Promise<boolean> {
    this.stopped = true;
    this.holds.clear();
    this.unblock();
    this.slots.close();
    // One deadline for both: a poll stuck on an unreachable Redis must not hold shutdown past it.
    const deadline = Date.now() + timeoutMs;
    const polled = await waitOrTimeout(Promise.all(this.loops.map((loop) => loop.stop())), timeoutMs);
    return polled && waitOrTimeout(this.slots.whenIdle(), Math.max(0, deadline - Date.now()));
  }

  /**
   * Stops claiming until every reason given is released (handlers under way finish); the polls send
   * nothing meanwhile.
   */
  hold(reason: HoldReason): void {
    this.holds.add(reason);
    if (this.held) return;
    let release!: () => void;
    const until = new Promise<void>((resolve) => (release = resolve));
    this.held = { until, release };
  }

  release(reason: HoldReason): void {
    this.holds.delete(reason);
    if (this.holds.size === 0) this.unblock();
  }

  private unblock(): void {
    const held = this.held;
    this.held = undefined;
    held?.release();
  }

  private async poll(shard: number): Promise<PollResult> {
    let reserved: number;
    for (;;) {
      while (this.held && !this.stopped) await this.held.until;
      // Half the slots at most: two polls in flight let Redis work on one while this process decodes the other.
      reserved = await this.slots.acquire(Math.ceil(this.slots.size / 2));
      // Held while it waited for them: a held consumer sends nothing to Redis.
      if (!this.held || this.stopped) break;
      this.slots.release(reserved);
    }
    let handed = 0;
    try {
      if (reserved === 0 || this.stopped) return { serverNow: 0, nextDueAt: Infinity };
      const { poll, items } = await this.options.claim(shard, reserved);
      // Claimed work is handed over even when stop() began meanwhile: it is no longer waiting in Redis.
      for (const item of items) {
        handed++;
        this.slots.run((free) => this.options.handle(shard, item, poll.serverNow, free));
      }
      return poll;
    } finally {
      this.slots.release(reserved - handed);
    }
  }
}
