import type { Logger } from '@nestjs/common';
import type { QueueEvents } from '../events/queue-events';
import type { ConsumerErrorEvent, QueueKind } from '../interfaces';
import type { QueueKeys } from '../redis/keys';
import type { RedisConnection } from '../redis/redis-connection';
import { WakeHints } from '../redis/wake-hints';
import { describeError } from '../utils/errors';
import { logLine } from '../utils/log-line';
import { RepeatedFailure } from '../utils/repeated-failure';
import { Deliveries, type RunningDelivery } from './deliveries';
import type { ConsumerSchedule } from './consumer-schedule';
import { ShardPoller, type Claimed } from './shard-poller';

/** What every consumer is built from, whatever its kind. */
export interface ConsumerDependencies {
  connection: RedisConnection;
  events: QueueEvents;
  logger: Logger;
  /** The queue consumed. */
  queue: string;
  shards: number;
  /** The queue's key names. */
  keys: QueueKeys;
  /** The queue's wake-up hints in this process: what wakes this consumer, and what it tells the others. */
  hints: WakeHints;
  /** `Class.method` of the consumer, in log lines and events. */
  label: string;
  /** The consumer's own options (its decorator's). */
  options: { concurrency: number; handlerTimeoutMs: number };
  idlePollMs: number;
  /** Drains on a schedule (cron / interval) instead of polling continuously. */
  schedule?: ConsumerSchedule;
}

/** A handler past its deadline, still running. */
export type OverdueHandler = ({ group: string } | { id: string }) & { runningMs: number; overdueMs: number };

/** One consumer of this process, as health checks and the dashboard see it. */
export interface ConsumerStatus {
  queue: string;
  kind: QueueKind;
  /** `Class.method` of the consumer. */
  consumer: string;
  running: boolean;
  /** Handlers under way. */
  inFlight: number;
  /** Handlers that ran past `handlerTimeoutMs` since start-up. */
  timedOut: number;
  /**
   * Handlers past `handlerTimeoutMs` still running, longest overdue first: each still holds its group
   * or task (no one else gets it) until it settles.
   */
  overdue: OverdueHandler[];
  /** Set while this consumer stopped claiming because too many of its handlers are overdue: why. */
  stalled?: string;
  /** Claim calls sent since start-up (one per poll of a shard), and the batches or tasks they handed out. */
  claims: number;
  claimed: number;
  /** For a consumer that drains on a schedule: the longest gap between two drains. */
  periodMs?: number;
}

/**
 * One `@BatchConsumer` or `@DelayConsumer` method at work: it claims from every shard of its queue
 * (continuously, woken early by producers' hints, or when its schedule fires), runs each delivery in a
 * concurrency slot under `handlerTimeoutMs`, keeps their leases, records their outcome, and on
 * shutdown gives back whatever its handlers did not finish in time. Subclasses say how a kind of
 * queue is claimed, handled and given back.
 */
export abstract class QueueConsumer<I, D extends RunningDelivery> {
  abstract readonly kind: QueueKind;
  readonly queue: string;
  readonly label: string;
  protected readonly logger: Logger;
  protected readonly events: QueueEvents;
  protected readonly poller: ShardPoller<I>;
  protected readonly deliveries: Deliveries<D>;
  private running = false;
  private claims = 0;
  private claimed = 0;
  private unsubscribe?: () => void;
  /** Acknowledgements and failures on their way to Redis: shutdown waits for them. */
  private readonly recording = new Set<Promise<unknown>>();
  /** Every shard's poll fails while Redis is away, each retrying with backoff: one account of it for all. */
  private readonly claimFailures = new RepeatedFailure({
    first: (error) => this.logger.warn(logLine(this.label, 'could not claim, retrying', { error })),
    summary: (count, sinceMs, error) =>
      this.logger.warn(logLine(this.label, 'still cannot claim, retrying', { failures: count, forMs: sinceMs, error })),
    recovered: (count, sinceMs) =>
      this.logger.log(logLine(this.label, 'claiming again', { failures: count, forMs: sinceMs })),
  });

  constructor(
    private readonly deps: ConsumerDependencies,
    lease: { leaseMs: number; extend?: (shard: number, deliveries: D[]) => Promise<boolean[]> },
  ) {
    this.queue = deps.queue;
    this.label = deps.label;
    this.logger = deps.logger;
    this.events = deps.events;
    this.poller = new ShardPoller<I>({
      shards: deps.shards,
      clock: deps.connection.clock,
      idlePollMs: deps.idlePollMs,
      concurrency: deps.options.concurrency,
      mode: deps.schedule ? 'scheduled' : 'continuous',
      claim: async (shard, limit) => {
        this.claims++;
        const claimed = await this.claim(shard, limit);
        this.claimFailures.succeeded();
        this.claimed += claimed.items.length;
        return claimed;
      },
      handle: (shard, item, serverNow, free) => this.handle(shard, item, serverNow, free),
      claimFailed: (error) => {
        this.claimFailures.failed(describeError(error));
        this.reportError('claim', error);
      },
    });
    this.deliveries = new Deliveries<D>({
      ...lease,
      handlerTimeoutMs: deps.options.handlerTimeoutMs,
      lost: (delivery) =>
        this.logger.warn(
          logLine(this.label, `lost the lease of the ${delivery.what} (another consumer may have it now)`),
        ),
      extendFailed: (error, count) => {
        this.logger.warn(logLine(this.label, 'could not extend leases', { count, error: describeError(error) }));
        this.reportError('extend', error);
      },
      overdue: (delivery) => this.handlerTimedOut(delivery),
      settledLate: (delivery, overdueMs) => this.handlerSettledLate(delivery, overdueMs),
    });
  }

  /** Claims at most `limit` items of a shard. */
  protected abstract claim(shard: number, limit: number): Promise<Claimed<I>>;

  /**
   * Handles one claimed item, in its slot, through `this.deliveries.run` (given `free`, which gives the
   * slot up once the handler is overdue).
   */
  protected abstract handle(shard: number, item: I, serverNow: number, free: () => void): Promise<void>;

  /** Hands back what shutdown abandoned, so it need not wait out its lease. Resolves with how many went back. */
  protected abstract giveBack(abandoned: D[]): Promise<number>;

  async start(): Promise<void> {
    this.running = true;
    const { schedule } = this.deps;
    if (schedule) {
      schedule.start(() => this.tick());
    } else {
      this.unsubscribe = await this.deps.connection.subscribe(
        this.deps.hints.channel,
        (message) => {
          const hint = WakeHints.parse(message);
          if (hint) this.poller.dueAt(hint.shard, hint.at);
        },
        // Hints lost while the subscriber reconnected: every shard is polled now, not at idlePollMs.
        () => this.poller.tick(),
      );
    }
    this.poller.start();
  }

  /**
   * Stops claiming and waits (at most `timeoutMs`) for running handlers; those still running then are
   * abandoned (their signals abort) and their work given back. Waits for outcomes on their way to
   * Redis. False when handlers had to be abandoned.
   */
  async stop(timeoutMs: number): Promise<boolean> {
    this.running = false;
    this.deps.schedule?.stop();
    this.unsubscribe?.();
    const finished = await this.poller.stop(timeoutMs);
    if (!finished) {
      const abandoned = this.deliveries.abandon(new Error('shutdown timeout ran out'));
      const given = await this.giveBack(abandoned).catch(() => 0);
      if (given > 0) {
        // Due again now: the consumers of other processes must not wait for the leases it had.
        for (const shard of new Set(abandoned.map((delivery) => delivery.shard))) this.deps.hints.now(shard);
        this.logger.warn(
          logLine(this.label, 'gave unfinished work back to the queue for another consumer', { count: given }),
        );
      }
    }
    await Promise.allSettled(this.recording);
    return finished;
  }

  /** Whether it claims new work now: started, not stopping, not held back. */
  protected get claiming(): boolean {
    return this.running && !this.poller.isHeld;
  }

  /** This process stops claiming for this consumer until `release` (other processes go on). */
  hold(): void {
    this.poller.hold('paused');
  }

  release(): void {
    this.poller.release('paused');
  }

  status(): ConsumerStatus {
    const { schedule } = this.deps;
    return {
      queue: this.queue,
      kind: this.kind,
      consumer: this.label,
      running: this.running,
      inFlight: this.poller.inFlight,
      timedOut: this.deliveries.timedOut,
      overdue: this.deliveries
        .overdue()
        .map(({ delivery, runningMs, overdueMs }) => ({ ...delivery.subject, runningMs, overdueMs })),
      ...(this.poller.heldFor('overdue') && { stalled: this.stalledReason() }),
      claims: this.claims,
      claimed: this.claimed,
      ...(schedule && { periodMs: schedule.periodMs }),
    };
  }

  /** Scheduled consumers: claims every due item now (their schedule calls this). */
  private tick(): void {
    if (this.running) this.poller.tick();
  }

  /**
   * Work this consumer put back in a shard (a retry, a group ready again, a repeat's next occurrence)
   * falls due at `at`, server ms. The consumers of every process are told, unless it is due now and
   * this one, claiming, takes it itself: so that nothing waits on a process that stops, dies or is held
   * before its time comes. This one polls the shard by then; a scheduled consumer only for work due by
   * `serverNow` (unknown: none), the rest waits for its next drain.
   */
  protected dueAt(shard: number, at: number, serverNow?: number): void {
    const now = serverNow ?? this.deps.connection.clock.estimate();
    if (!this.claiming || at > now) this.deps.hints.publish(shard, at, now);
    if (this.deps.schedule && (serverNow === undefined || at > serverNow)) return;
    this.poller.dueAt(shard, at);
  }

  /**
   * Keeps a delivery's acknowledgement or failure until Redis has it, so that shutdown can wait for it
   * before the connection closes. The slot is free once the handler is: recording overlaps with the
   * next delivery. A write that fails is logged and reported; the lease runs out and the delivery's
   * fate is settled without it.
   */
  protected record(operation: 'ack' | 'fail', outcome: Promise<unknown>, delivery: D): void {
    this.recording.add(outcome);
    outcome
      .catch((error) => {
        this.logger.warn(
          logLine(this.label, `could not record the ${operation} of the ${delivery.what}`, {
            error: describeError(error),
          }),
        );
        this.reportError(operation, error);
      })
      .finally(() => this.recording.delete(outcome));
  }

  /**
   * A handler ran past `handlerTimeoutMs`: one warning line, and the event metrics count. Past
   * `concurrency` such handlers still running, the consumer stops claiming until some settle: a
   * handler that leaks its promises must not pile up work without bound.
   */
  private handlerTimedOut(delivery: D): void {
    const timeoutMs = this.deps.options.handlerTimeoutMs;
    this.logger.warn(
      logLine(
        this.label,
        `handler did not settle in time; its signal is aborted and its slot freed, the ${delivery.what} stays held until it settles`,
        { ...delivery.subject, handlerTimeoutMs: timeoutMs },
      ),
    );
    if (this.events.has('handler.timeout'))
      this.events.emit('handler.timeout', { queue: this.queue, consumer: this.label, timeoutMs, ...delivery.subject });
    if (this.deliveries.overdueCount > this.maxOverdue && !this.poller.heldFor('overdue')) {
      this.poller.hold('overdue');
      this.logger.warn(logLine(this.label, `stops claiming: ${this.stalledReason()}`));
    }
  }

  private handlerSettledLate(delivery: D, overdueMs: number): void {
    this.logger.log(
      logLine(this.label, `overdue handler settled; the ${delivery.what} is let go`, {
        ...delivery.subject,
        overdueMs: Math.round(overdueMs),
      }),
    );
    if (this.poller.heldFor('overdue') && this.deliveries.overdueCount <= this.maxOverdue) {
      this.poller.release('overdue');
      this.logger.log(logLine(this.label, 'claiming again: overdue handlers settled'));
    }
  }

  /** Overdue handlers a consumer lets run beside its slots before it stops claiming. */
  private get maxOverdue(): number {
    return this.deps.options.concurrency;
  }

  private stalledReason(): string {
    return `${this.deliveries.overdueCount} handlers past handlerTimeoutMs (${this.deps.options.handlerTimeoutMs} ms) are still running, more than its concurrency (${this.maxOverdue})`;
  }

  protected reportError(operation: ConsumerErrorEvent['operation'], error: unknown): void {
    const { events, queue } = this;
    if (events.has('consumer.error')) events.emit('consumer.error', { queue, consumer: this.label, operation, error });
  }
}
