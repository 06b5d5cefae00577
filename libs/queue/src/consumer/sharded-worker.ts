import type { Logger } from '@nestjs/common';
import type { QueueEvents } from '../events/queue-events';
import type { ConsumerErrorEvent } from '../interfaces';
import type { ServerClock } from './server-clock';
import { ShardLoop, type PollOutcome } from './shard-loop';
import { Slots } from './slots';
import { describeError } from '../utils/errors';
import { logLine } from '../utils/log-line';
import { RepeatedFailure } from '../utils/repeated-failure';
import { waitOrTimeout } from '../utils/timers';

export interface Taken {
  outcome: PollOutcome;
  /** One job per claimed item; each runs in a concurrency slot. */
  jobs: (() => Promise<void>)[];
}

/** What every consumer of a queue works with, whatever its kind. */
export interface WorkerDependencies {
  /** The queue's name, in the events it emits. */
  queue: string;
  shards: number;
  /** The channel producers publish wake-up hints on (`<shard>:<due time>`). */
  wakeChannel: string;
  /** The queue's estimate of Redis' clock, fed by this worker's polls. */
  clock: ServerClock;
  events: QueueEvents;
  /** Listens on a pub/sub channel; resolves with the function that stops listening. */
  subscribe(channel: string, listener: (message: string) => void): Promise<() => void>;
  idlePollMs: number;
  concurrency: number;
  logger: Logger;
  /** `Class.method` of the consumer, in log lines and events. */
  label: string;
}

/**
 * A consumer of every shard of one queue: a poll loop per shard, all sharing one pool of `concurrency`
 * slots, woken early by producers' hints on the queue's channel. Subclasses say how to claim.
 */
export abstract class ShardedWorker {
  protected readonly slots: Slots;
  protected stopped = false;
  protected readonly shards: number;
  protected readonly logger: Logger;
  readonly label: string;
  private readonly loops: ShardLoop[] = [];
  private readonly recording = new Set<Promise<unknown>>();
  private unsubscribe?: () => void;
  /** Set while this process holds its consumers back (`QueueConsumers.pauseConsumers`): polls wait on it. */
  private held?: { until: Promise<void>; release: () => void };
  /** Every shard's poll fails while Redis is away, each retrying with backoff: one account of it for all. */
  private readonly claimFailures = new RepeatedFailure({
    first: (error) => this.logger.warn(logLine(this.label, 'could not claim, retrying', { error })),
    summary: (count, sinceMs, error) =>
      this.logger.warn(logLine(this.label, 'still cannot claim, retrying', { failures: count, forMs: sinceMs, error })),
    recovered: (count, sinceMs) =>
      this.logger.log(logLine(this.label, 'claiming again', { failures: count, forMs: sinceMs })),
  });

  constructor(private readonly worker: WorkerDependencies) {
    this.slots = new Slots(worker.concurrency);
    this.shards = worker.shards;
    this.logger = worker.logger;
    this.label = worker.label;
  }

  /** Claims at most `limit` items of a shard (never more: the slots are already reserved). */
  protected abstract take(shard: number, limit: number): Promise<Taken>;

  /** The queue consumed. */
  get queue(): string {
    return this.worker.queue;
  }

  get inFlight(): number {
    return this.slots.inFlight;
  }

  /** Polls every shard continuously, sleeping until work is due. */
  async start(): Promise<void> {
    for (let shard = 0; shard < this.shards; shard++) {
      this.loops.push(
        new ShardLoop(
          () => this.pollShard(shard),
          this.worker.clock,
          this.worker.idlePollMs,
          (error) => this.pollFailed(error),
        ),
      );
    }
    this.unsubscribe = await this.worker.subscribe(this.worker.wakeChannel, (message) => {
      const [shard, at] = message.split(':').map(Number);
      this.loops[shard]?.hint(at);
    });
    for (const loop of this.loops) loop.start();
  }

  /** Stops claiming, then waits (at most `timeoutMs`) for the handlers already running. False on timeout. */
  async stop(timeoutMs: number): Promise<boolean> {
    this.stopped = true;
    this.held?.release();
    this.unsubscribe?.();
    this.slots.close();
    // One deadline for both: a poll stuck on an unreachable Redis must not hold shutdown past it.
    const deadline = Date.now() + timeoutMs;
    const polled = await waitOrTimeout(Promise.all(this.loops.map((loop) => loop.stop())), timeoutMs);
    return polled && waitOrTimeout(this.slots.whenIdle(), Math.max(0, deadline - Date.now()));
  }

  /**
   * This process stops claiming for this consumer, until `release`: its polls wait without a command
   * to Redis (handlers under way finish). Unlike a queue's `pause()`, other processes go on.
   */
  hold(): void {
    if (this.held) return;
    let release!: () => void;
    const until = new Promise<void>((resolve) => (release = resolve));
    this.held = { until, release };
  }

  release(): void {
    const held = this.held;
    this.held = undefined;
    held?.release();
  }

  get isHeld(): boolean {
    return this.held !== undefined;
  }

  /** Work this process put back in a shard falls due then (server ms): poll it by then. */
  protected dueAt(shard: number, serverTime: number): void {
    this.loops[shard]?.hint(serverTime);
  }

  protected async pollShard(shard: number): Promise<PollOutcome> {
    while (this.held && !this.stopped) await this.held.until;
    // Half the slots at most: two polls in flight let Redis work on one while this process decodes the other.
    const reserved = await this.slots.acquire(Math.ceil(this.slots.size / 2));
    let handed = 0;
    try {
      if (reserved === 0 || this.stopped) return { serverNow: 0, nextDueAt: Infinity };
      const { outcome, jobs } = await this.take(shard, reserved);
      this.claimFailures.succeeded();
      // Claimed work is handed over even when stop() began meanwhile: it is no longer waiting in Redis.
      for (const job of jobs) {
        handed++;
        this.slots.run(job);
      }
      return outcome;
    } finally {
      this.slots.release(reserved - handed);
    }
  }

  protected pollFailed(error: unknown): void {
    this.claimFailures.failed(describeError(error));
    this.reportError('claim', error);
  }

  /**
   * Keeps a delivery's acknowledgement or failure until Redis has it, so that shutdown can wait for it
   * (`recorded()`) before the connection closes. The slot is free once the handler is: recording
   * overlaps with the next delivery. A write that fails is logged and reported; the lease runs out and
   * the delivery's fate is settled without it.
   */
  protected record(
    operation: 'ack' | 'fail',
    outcome: Promise<unknown>,
    what: string,
    fields: Record<string, string | number>,
  ): void {
    this.recording.add(outcome);
    outcome
      .catch((error) => {
        this.logger.warn(
          logLine(this.label, `could not record the ${what}'s ${operation}`, {
            ...fields,
            error: describeError(error),
          }),
        );
        this.reportError(operation, error);
      })
      .finally(() => this.recording.delete(outcome));
  }

  /** A heartbeat could not extend leases: they may run out, and the deliveries go to other consumers. */
  protected extendFailed(error: unknown, count: number): void {
    this.logger.warn(logLine(this.label, 'could not extend leases', { count, error: describeError(error) }));
    this.reportError('extend', error);
  }

  /** Resolves once every acknowledgement and failure recorded so far reached Redis, or failed to. */
  protected async recorded(): Promise<void> {
    await Promise.allSettled(this.recording);
  }

  protected reportError(operation: ConsumerErrorEvent['operation'], error: unknown): void {
    const { events, queue } = this.worker;
    if (events.has('consumer.error')) events.emit('consumer.error', { queue, consumer: this.label, operation, error });
  }
}
