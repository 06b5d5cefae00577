import { setTimeout as delay } from 'node:timers/promises';
import type { QueueKind } from '../interfaces';
import type { RedisConnection } from '../redis/redis-connection';
import { WakeHints } from '../redis/wake-hints';
import type { ConsumerAdapter, DueAgain, Handover, HandlerResult, OpenedDelivery } from './consumer-adapter';
import type { ConsumerSchedule } from './consumer-schedule';
import { shutdownRanOut } from './consumer.messages';
import { ABANDONED, Deliveries, overdue } from './deliveries';
import type { OutcomeReporter } from './outcome-reporter';
import type { RetryPolicy } from './retry-policy';
import { ShardPoller } from './shard-poller';

/** What a consumer runtime is built from, whatever its queue's kind. */
export interface ConsumerRuntimeOptions<I, D extends OpenedDelivery> {
  /** The queue consumed. */
  queue: string;
  shards: number;
  /** `Class.method` of the consumer, in log lines, events and health. */
  label: string;
  /** How the queue's kind claims, settles, keeps and gives back its work. */
  adapter: ConsumerAdapter<I, D>;
  reporter: OutcomeReporter<D>;
  connection: Pick<RedisConnection, 'clock' | 'subscribe'>;
  /** The queue's wake-up hints in this process: what wakes this consumer, and what it tells the others. */
  hints: Pick<WakeHints, 'channel' | 'publish' | 'now'>;
  concurrency: number;
  handlerTimeoutMs: number;
  idlePollMs: number;
  /** Drains on a schedule (cron / interval) instead of polling continuously. */
  schedule?: ConsumerSchedule;
}

/** A handler past its deadline, still running. */
export type OverdueHandler = ({ group: string } | { id: string }) & { runningMs: number; overdueMs: number };

/** What keeps a consumer busy, as QueueClock sees it (`ConsumerRuntime.activity`). */
export interface ConsumerActivity {
  consumer: string;
  handlers: number;
  working: boolean;
}

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
 * Deliveries of one group a slot handles in a row, each handed over by the settlement of the one before;
 * then the group goes back to the queue, so that a group that never empties does not keep a slot from
 * the others.
 */
const MAX_HANDOVERS = 16;

/** A handler that resolved: one value for every delivery. */
const RESOLVED: HandlerResult = Object.freeze({ ok: true });

/**
 * One `@BatchConsumer`, `@DelayConsumer` or `@Recurring` method at work, whatever its queue's kind: it
 * claims from every shard (continuously, woken early by hints, or when its schedule fires), runs each
 * delivery in a concurrency slot under `handlerTimeoutMs` (with in-process retries where the adapter
 * asks for them), keeps the leases, has the adapter settle each outcome and the reporter tell it, and on
 * shutdown gives back what its handlers did not finish in time.
 */
export class ConsumerRuntime<I, D extends OpenedDelivery> {
  readonly queue: string;
  readonly label: string;
  readonly kind: QueueKind;
  private readonly adapter: ConsumerAdapter<I, D>;
  private readonly reporter: OutcomeReporter<D>;
  private readonly poller: ShardPoller<I>;
  private readonly deliveries: Deliveries<D>;
  private running = false;
  private claims = 0;
  private claimed = 0;
  private unsubscribe?: () => void;
  /** Outcomes on their way to Redis: shutdown waits for them. */
  private readonly recording = new Set<Promise<unknown>>();

  constructor(private readonly options: ConsumerRuntimeOptions<I, D>) {
    const { adapter, reporter } = options;
    this.queue = options.queue;
    this.label = options.label;
    this.kind = adapter.kind;
    this.adapter = adapter;
    this.reporter = reporter;
    this.poller = new ShardPoller<I>({
      shards: options.shards,
      clock: options.connection.clock,
      idlePollMs: options.idlePollMs,
      concurrency: options.concurrency,
      mode: options.schedule ? 'scheduled' : 'continuous',
      claim: async (shard, limit) => {
        this.claims++;
        const claimed = await adapter.claim(shard, limit);
        reporter.claimSucceeded();
        this.claimed += claimed.items.length;
        for (const { group, count } of claimed.expired ?? []) reporter.expired(group, count);
        for (const group of claimed.paused ?? []) reporter.lapsedGroupPaused(group);
        return claimed;
      },
      handle: (shard, item, serverNow, free) => this.handle(shard, item, serverNow, free),
      claimFailed: (error) => reporter.claimFailed(error),
    });
    this.deliveries = new Deliveries<D>({
      leaseMs: adapter.leaseMs,
      extend: adapter.extend && ((shard, deliveries) => adapter.extend!(shard, deliveries)),
      handlerTimeoutMs: options.handlerTimeoutMs,
      lost: (delivery) => reporter.leaseLost(delivery),
      extendFailed: (error, count) => reporter.extendFailed(error, count),
      overdue: (delivery) => this.handlerTimedOut(delivery),
      settledLate: (delivery, overdueMs) => this.handlerSettledLate(delivery, overdueMs),
    });
  }

  async start(): Promise<void> {
    this.running = true;
    const { schedule, connection, hints } = this.options;
    if (schedule) {
      schedule.start(() => this.tick());
    } else {
      this.unsubscribe = await connection.subscribe(
        hints.channel,
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
   * abandoned (their signals abort) and their work given back, counted as an attempt where the handler
   * was past handlerTimeoutMs. Waits for outcomes on their way to
   * Redis. False when handlers had to be abandoned.
   */
  async stop(timeoutMs: number): Promise<boolean> {
    this.running = false;
    this.options.schedule?.stop();
    this.unsubscribe?.();
    const finished = await this.poller.stop(timeoutMs);
    if (!finished) {
      // Overdue handlers keep their HandlerTimeoutError as their signal's reason: their attempts count.
      const abandoned = this.deliveries
        .abandon(shutdownRanOut())
        .map((delivery) => ({ delivery, counted: overdue(delivery) }));
      const given = await this.adapter.giveBack(abandoned).catch(() => 0);
      if (given > 0) {
        // Due again now: the consumers of other processes must not wait for the leases it had.
        for (const shard of new Set(abandoned.map(({ delivery }) => delivery.shard))) this.options.hints.now(shard);
        this.reporter.gaveBack(given, abandoned.filter(({ counted }) => counted).length);
      }
    }
    await Promise.allSettled(this.recording);
    return finished;
  }

  /** This process stops claiming for this consumer until `release` (other processes go on). */
  hold(): void {
    this.poller.hold('paused');
  }

  release(): void {
    this.poller.release('paused');
  }

  /** A call of this process ended the task `id` (cancel): if this consumer runs it, its signal aborts now. */
  taskEnded(id: string, reason: Error): void {
    for (const delivery of this.deliveries.current())
      if ('id' in delivery.subject && delivery.subject.id === id) delivery.aborter.abort(reason);
  }

  status(): ConsumerStatus {
    const { schedule } = this.options;
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

  /**
   * What keeps this consumer busy now: its handlers running (overdue ones too), and whether a poll
   * (or a wake-up for one due now) or an outcome is on its way to Redis. QueueClock waits for both
   * before it moves a memory clock on, and names only the handlers when they do not settle (a slot
   * reserved by a poll is not a handler).
   */
  activity(): ConsumerActivity {
    return {
      consumer: this.label,
      handlers: this.deliveries.size,
      working: this.poller.polling || this.recording.size > 0,
    };
  }

  /** Whether it claims new work now: started, not stopping, not held back. */
  private get claiming(): boolean {
    return this.running && !this.poller.isHeld;
  }

  /** Scheduled consumers: claims every due item now (their schedule calls this). */
  private tick(): void {
    if (this.running) this.poller.tick();
  }

  /**
   * Handles a claimed item, then the items its settlements hand over to the same slot (the same
   * group's next batch, due now), `MAX_HANDOVERS` in a row at most.
   */
  private async handle(shard: number, item: I, claimedAt: number, free: () => void): Promise<void> {
    let next: Handover<I> | undefined = { item, claimedAt };
    try {
      for (let handovers = 1; next; handovers++)
        next = await this.deliver(shard, next, free, handovers < MAX_HANDOVERS);
    } catch (error) {
      // A fault of this library's own, not of the handler (deliver catches those): the lease gives the item
      // back, and the process goes on rather than ending on an unhandled rejection.
      this.reporter.error('could not handle a claimed delivery; its lease gives it back', error);
    }
  }

  /** One delivery: open, run, settle, report. Resolves with the item handed over to the slot, if any. */
  private async deliver(
    shard: number,
    { item, claimedAt }: Handover<I>,
    free: () => void,
    more: boolean,
  ): Promise<Handover<I> | undefined> {
    const { adapter, reporter } = this;
    const delivery = adapter.open(shard, item, claimedAt);
    if (delivery.skip) {
      // Asks for nothing to be handed over; a rejection all the same is handled as a delivery's is below.
      return this.settle(delivery, RESOLVED, false, 0)?.catch(() => undefined);
    }
    const lapsedMs = this.lapsedFor(claimedAt);
    if (lapsedMs >= 0) {
      reporter.lapsedBeforeStart(delivery, lapsedMs);
      return undefined;
    }
    reporter.started(delivery);
    const policy = this.adapter.localRetries;
    /** In-process retries: the time the handler ran, waits not counted. */
    let spentMs: number | undefined;
    const started = performance.now();
    let result: HandlerResult = RESOLVED;
    try {
      await this.deliveries.run(
        delivery,
        policy ? () => this.attempts(delivery, policy, (ms) => (spentMs = ms)) : () => this.call(delivery),
        free,
      );
    } catch (error) {
      // Shutdown gave the delivery back already.
      if (error === ABANDONED) {
        await reporter.settled(delivery, RESOLVED, { fate: { type: 'given-back' } }, 0);
        return undefined;
      }
      result = { ok: false, error };
    }
    const durationMs = spentMs ?? performance.now() - started;
    const next = this.settle(delivery, result, more && !overdue(delivery) && this.claiming, durationMs);
    // A failed acknowledgement is reported by `settle`; the lease returns what the slot would have had.
    return next?.catch(() => undefined);
  }

  /**
   * How long ago the lease of an item claimed at `claimedAt` (server ms) ran out, by this process'
   * estimate of Redis' clock, which if anything runs behind (a lease is never taken for over while it
   * holds); -1 while it holds, or when the adapter runs late work.
   */
  private lapsedFor(claimedAt: number): number {
    const { clock } = this.options.connection;
    if (!this.adapter.redeliversLapsed || !clock.known) return -1;
    const lapsedMs = clock.estimate() - claimedAt - this.adapter.leaseMs;
    return lapsedMs >= 0 ? lapsedMs : -1;
  }

  /** Calls a delivery's handler, in its span's context when traced. */
  private call(delivery: D): unknown {
    return delivery.span ? delivery.span.run(() => delivery.call()) : delivery.call();
  }

  /**
   * Runs a delivery's handler, then again after each failure while `policy` allows and its deadline has
   * not passed. `spent` is told the time the handler ran (waits not counted).
   */
  private async attempts(delivery: D, policy: RetryPolicy, spent: (ms: number) => void): Promise<void> {
    let spentMs = 0;
    for (;;) {
      const started = performance.now();
      let failure: { error: unknown } | undefined;
      try {
        await this.call(delivery);
      } catch (error) {
        failure = { error };
      }
      spentMs += performance.now() - started;
      spent(spentMs);
      if (!failure) return;
      const { error } = failure;
      if (policy.exhausted(delivery.attempt) || delivery.aborter.aborted) throw error;
      this.reporter.retrying(delivery, error);
      // Aborted meanwhile (lease lost, timed out): the handler's error stands.
      await delay(policy.delayAfter(delivery.attempt), undefined, { signal: delivery.aborter.signal }).catch(() => {
        throw error;
      });
      delivery.attempt++;
    }
  }

  /**
   * Has the adapter record the outcome, keeping it until Redis has it so that shutdown can wait for it;
   * then makes what it put back due and reports it. Returns the item handed over, when `next` asked.
   */
  private settle(
    delivery: D,
    result: HandlerResult,
    next: boolean,
    durationMs: number,
  ): Promise<Handover<I> | undefined> | undefined {
    const settlement = this.adapter.settle(delivery, result, next);
    const reported = settlement.recorded.then(
      (recorded) => {
        if (recorded.due) this.dueAt(delivery.shard, recorded.due);
        return this.reporter.settled(delivery, result, recorded, durationMs);
      },
      (error: unknown) => this.reporter.unrecorded(delivery, result, error),
    );
    this.recording.add(reported);
    const done = () => this.recording.delete(reported);
    reported.then(done, done);
    return settlement.next;
  }

  /**
   * Work put back in a shard (a retry, a group ready again, a repeat's next occurrence) falls due at
   * `at`, server ms. The consumers of every process are told, unless it is due now and this one,
   * claiming, takes it itself: so that nothing waits on a process that stops, dies or is held before
   * its time comes. This one polls the shard by then; a scheduled consumer only for work due by
   * `serverNow` (unknown: none), the rest waits for its next drain.
   */
  private dueAt(shard: number, { at, serverNow }: DueAgain): void {
    const now = serverNow ?? this.options.connection.clock.estimate();
    if (!this.claiming || at > now) this.options.hints.publish(shard, at, now);
    if (this.options.schedule && (serverNow === undefined || at > serverNow)) return;
    this.poller.dueAt(shard, at);
  }

  /**
   * A handler ran past `handlerTimeoutMs`. Past `concurrency` such handlers still running, the consumer
   * stops claiming until some settle: a handler that leaks its promises must not pile up work without
   * bound.
   */
  private handlerTimedOut(delivery: D): void {
    this.reporter.overdue(delivery, this.options.handlerTimeoutMs);
    if (this.deliveries.overdueCount > this.maxOverdue && !this.poller.heldFor('overdue')) {
      this.poller.hold('overdue');
      this.reporter.warn(`stops claiming: ${this.stalledReason()}`);
    }
  }

  private handlerSettledLate(delivery: D, overdueMs: number): void {
    this.reporter.settledLate(delivery, overdueMs);
    if (this.poller.heldFor('overdue') && this.deliveries.overdueCount <= this.maxOverdue) {
      this.poller.release('overdue');
      this.reporter.note('claiming again: overdue handlers settled');
    }
  }

  /** Overdue handlers a consumer lets run beside its slots before it stops claiming. */
  private get maxOverdue(): number {
    return this.options.concurrency;
  }

  private stalledReason(): string {
    return `${this.deliveries.overdueCount} handlers past handlerTimeoutMs (${this.options.handlerTimeoutMs} ms) are still running, more than its concurrency (${this.maxOverdue})`;
  }
}
