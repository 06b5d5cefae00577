import { Logger, type OnModuleDestroy } from '@nestjs/common';
import type { Counter, Gauge, Histogram } from 'prom-client';
import type { QueueEvents } from '../events/queue-events';
import { describeError } from '../utils/errors';
import { METRICS_DEFAULTS } from '../queue.defaults';
import { loadOptional } from '../optional-dependency';
import type { ConsumerRegistry } from '../consumer/consumer.registry';
import type { QueueRegistry } from '../queue.registry';
import type { RecurringSchedules } from '../recurring/recurring-schedules';
import type { RedisConnection } from '../redis/redis-connection';
import type { QueueKind } from '../interfaces';
import type {
  DelayQueueStats,
  FixedQueueStats,
  QueueEventListener,
  QueueEventName,
  QueueMetricsOptions,
  RecurringScheduleInfo,
} from '../interfaces';

const LATENESS_BUCKETS = [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 300];
const DURATION_BUCKETS = [0.001, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60];
const BATCH_SIZE_BUCKETS = [1, 2, 4, 8, 16, 32, 64, 128, 256, 512, 1024];
/** The gauges of one scrape share one stats() call per queue. */
const SNAPSHOT_TTL_MS = 250;

type PromClient = typeof import('prom-client');

interface Snapshot {
  kind: QueueKind;
  name: string;
  stats?: FixedQueueStats | DelayQueueStats;
}

/**
 * The queues' Prometheus metrics. Counters and histograms count what this process did (sum them over
 * instances); they are fed by QueueEvents, so pushes are counted once per script call, not per message.
 * Gauges describe each whole queue as Redis holds it (every instance reports the same value: take the
 * max, not the sum); they are read with `stats()` when Prometheus scrapes, O(shards) per queue.
 */
export class QueueMetrics implements OnModuleDestroy {
  private readonly logger = new Logger('QueueMetrics');
  private readonly names: string[] = [];
  private readonly unsubscribe: (() => void)[] = [];
  private snapshot?: { at: number; queues: Promise<Snapshot[]> };

  /** @internal Made by Nest (QueueMetricsModule), not by the application. */
  constructor(
    private readonly events: QueueEvents,
    private readonly queues: QueueRegistry,
    private readonly options: QueueMetricsOptions = {},
    private readonly recurring?: RecurringSchedules,
    private readonly consumers?: ConsumerRegistry,
    private readonly connection?: RedisConnection,
  ) {
    const prom = loadOptional<PromClient>('prom-client', 'QueueMetricsModule');
    const { buckets = {} } = options;

    const pushed = this.counter(prom, 'messages_pushed_total', 'Messages stored by pushes of this process.');
    const dropped = this.counter(
      prom,
      'messages_dropped_total',
      'Older messages evicted at capacity by pushes of this process.',
    );
    const expired = this.counter(
      prom,
      'messages_expired_total',
      'Messages discarded unread (maxAgeMs, ttlMs), as consumers of this process found them.',
    );
    const batches = this.counter(prom, 'batches_total', 'Batches handled by consumers of this process, by outcome.', [
      'queue',
      'outcome',
    ]);
    const batchSize = this.histogram(
      prom,
      'batch_size_messages',
      'Messages per batch handed to a consumer of this process.',
      buckets.batchSize ?? BATCH_SIZE_BUCKETS,
    );
    const scheduled = this.counter(prom, 'tasks_scheduled_total', 'Tasks written by schedule() calls of this process.');
    const fired = this.counter(prom, 'tasks_fired_total', 'Due tasks claimed by consumers of this process.');
    const completed = this.counter(prom, 'tasks_completed_total', 'Tasks whose handler in this process succeeded.');
    const retried = this.counter(
      prom,
      'tasks_retried_total',
      'Failed task attempts in this process that will be retried.',
    );
    const dead = this.counter(
      prom,
      'tasks_dead_total',
      'Tasks dead-lettered after their last attempt failed in this process.',
    );
    const lateness = this.histogram(
      prom,
      'task_lateness_seconds',
      'Time from a task being due to its claim, by Redis time.',
      buckets.lateness ?? LATENESS_BUCKETS,
    );
    const duration = this.histogram(
      prom,
      'handler_duration_seconds',
      'Time spent in batch and task handlers, by outcome.',
      buckets.duration ?? DURATION_BUCKETS,
      ['queue', 'outcome'],
    );
    const timeouts = this.counter(
      prom,
      'handler_timeouts_total',
      'Handlers of this process abandoned for running past handlerTimeoutMs (each delivery failed).',
    );
    const redeclared = this.counter(
      prom,
      'state_redeclared_total',
      'What this process declared again after Redis lost it: a @Recurring schedule (what="recurring") or a queue record (what="queue").',
      ['queue', 'what'],
    );
    const restored = this.counter(
      prom,
      'tasks_restored_total',
      "Listed tasks a pass of this process' task source wrote (missing ones, and those onExists replaced).",
    );
    const passes = this.counter(prom, 'reconcile_passes_total', "Passes of this process' task sources, by trigger.", [
      'queue',
      'trigger',
    ]);
    const reconciledTasks = this.counter(
      prom,
      'reconcile_tasks_total',
      "Tasks listed by this process' task sources, by outcome (restored, kept, swept, invalid).",
      ['queue', 'outcome'],
    );
    const passDuration = this.histogram(
      prom,
      'reconcile_duration_seconds',
      "How long passes of this process' task sources took.",
      buckets.duration ?? DURATION_BUCKETS,
    );
    const lost = this.counter(
      prom,
      'data_lost_total',
      'Times this process found a queue record gone that it had seen: the queue lost its data.',
    );
    const errors = this.counter(
      prom,
      'consumer_errors_total',
      'Redis errors met by consumers of this process, by operation.',
      ['queue', 'operation'],
    );

    // Children by queue: labelling once, not per event.
    const inc = children(pushed);
    const incDropped = children(dropped);
    const incExpired = children(expired);
    const batchCompleted = children(batches, 'completed');
    const batchFailed = children(batches, 'failed');
    const sizes = children(batchSize);
    const incScheduled = children(scheduled);
    const incFired = children(fired);
    const incCompleted = children(completed);
    const incRetried = children(retried);
    const incDead = children(dead);
    const late = children(lateness);
    const tookCompleted = children(duration, 'completed');
    const tookFailed = children(duration, 'failed');

    this.listen('messages.pushed', (e) => inc(e.queue).inc(e.count));
    this.listen('messages.dropped', (e) => incDropped(e.queue).inc(e.count));
    this.listen('messages.expired', (e) => incExpired(e.queue).inc(e.count));
    this.listen('batch.completed', (e) => {
      batchCompleted(e.queue).inc();
      sizes(e.queue).observe(e.size);
      tookCompleted(e.queue).observe(e.durationMs / 1000);
    });
    this.listen('batch.failed', (e) => {
      batchFailed(e.queue).inc();
      sizes(e.queue).observe(e.size);
      tookFailed(e.queue).observe(e.durationMs / 1000);
    });
    this.listen('tasks.scheduled', (e) => incScheduled(e.queue).inc(e.count));
    this.listen('task.fired', (e) => {
      incFired(e.queue).inc();
      late(e.queue).observe(Math.max(0, e.firedAt - e.dueAt) / 1000);
    });
    this.listen('task.completed', (e) => {
      incCompleted(e.queue).inc();
      tookCompleted(e.queue).observe(e.durationMs / 1000);
    });
    this.listen('task.failed', (e) => {
      incRetried(e.queue).inc();
      tookFailed(e.queue).observe(e.durationMs / 1000);
    });
    this.listen('task.dead', (e) => {
      incDead(e.queue).inc();
      tookFailed(e.queue).observe(e.durationMs / 1000);
    });
    this.listen('consumer.error', (e) => errors.labels(e.queue, e.operation).inc());
    const timedOut = children(timeouts);
    this.listen('handler.timeout', (e) => timedOut(e.queue).inc());
    if (this.consumers) this.overdueGauge(prom, this.consumers);
    this.listen('state.redeclared', (e) => redeclared.labels(e.queue, e.what).inc());
    this.listen('queue.data-lost', (e) => lost.labels(e.queue).inc());
    this.listen('queue.reconciled', (e) => {
      restored.labels(e.queue).inc(e.restored);
      passes.labels(e.queue, e.trigger).inc();
      for (const outcome of ['restored', 'kept', 'swept', 'invalid'] as const)
        reconciledTasks.labels(e.queue, outcome).inc(e[outcome]);
      passDuration.labels(e.queue).observe(e.durationMs / 1000);
    });

    this.gauge(
      prom,
      'messages_pending',
      'Messages held in the queue (all groups), in Redis.',
      [],
      (set, { kind, stats }) => {
        if (kind === 'fixed') set((stats as FixedQueueStats).pending);
      },
    );
    this.gauge(prom, 'groups', 'Groups holding messages, in Redis.', [], (set, { kind, stats }) => {
      if (kind === 'fixed') set((stats as FixedQueueStats).groups);
    });
    this.gauge(
      prom,
      'groups_paused',
      'Groups paused (pauseGroup), whose messages wait for resumeGroup, in Redis.',
      [],
      (set, { kind, stats }) => {
        if (kind === 'fixed') set((stats as FixedQueueStats).pausedGroups);
      },
    );
    this.gauge(
      prom,
      'messages_dead',
      'Messages in dead batches now (at-least-once FixedQueue), in Redis.',
      [],
      (set, { kind, stats }) => {
        if (kind === 'fixed') set((stats as FixedQueueStats).dead);
      },
    );
    this.gauge(
      prom,
      'tasks',
      'Tasks in Redis, by state (scheduled, active, dead).',
      ['state'],
      (set, { kind, stats }) => {
        if (kind !== 'delay') return;
        const { scheduled: waiting, active, dead: buried } = stats as DelayQueueStats;
        set(waiting, 'scheduled');
        set(active, 'active');
        set(buried, 'dead');
      },
    );
    this.gauge(
      prom,
      'tasks_due',
      'Scheduled tasks already due, waiting for a consumer.',
      [],
      (set, { kind, stats }) => {
        if (kind === 'delay') set((stats as DelayQueueStats).due);
      },
    );
    this.gauge(
      prom,
      'oldest_due_lag_seconds',
      'How long the most overdue group or task has waited past its due time, by Redis time.',
      [],
      (set, { stats }) => set(stats!.lagMs / 1000),
    );
    if (this.recurring) this.recurringGauges(prom, this.recurring);
    if (this.connection) this.subscriberRestarts(prom, this.connection);
  }

  /** How often this process' wake-up subscriber was found silent and connected again (a process-wide counter). */
  private subscriberRestarts(prom: PromClient, connection: RedisConnection): void {
    new prom.Counter({
      name: this.name('subscriber_restarts_total'),
      help: "Times this process' wake-up subscriber connection missed its PING deadline and was connected again.",
      registers: [this.registry() as never],
      collect() {
        this.reset();
        this.inc(connection.subscriberStatus()?.restarts ?? 0);
      },
    });
  }

  /**
   * Handlers of this process past their handlerTimeoutMs and still running, each holding its group or
   * task (sum over instances, like the counters): read from the consumers, no call to Redis.
   */
  private overdueGauge(prom: PromClient, consumers: ConsumerRegistry): void {
    const queues = this.queues;
    const gauge: Gauge<string> = new prom.Gauge({
      name: this.name('handlers_overdue'),
      help: 'Handlers of this process past handlerTimeoutMs that have not settled; each still holds its group or task.',
      labelNames: ['queue'],
      registers: [this.registry() as never],
      collect() {
        gauge.reset();
        const overdue = new Map(queues.all().map(({ name }) => [name, 0]));
        for (const { queue, overdue: handlers } of consumers.statuses())
          overdue.set(queue, (overdue.get(queue) ?? 0) + handlers.length);
        for (const [queue, count] of overdue) gauge.labels(queue).set(count);
      },
    });
  }

  /**
   * The `@Recurring` schedules of the application (every process reports the same values): when each
   * last succeeded — alert when `time() - that` exceeds a few periods — and when it runs next.
   */
  private recurringGauges(prom: PromClient, recurring: RecurringSchedules): void {
    const logger = this.logger;
    // Both gauges of one scrape share one read.
    let last: { at: number; schedules: Promise<RecurringScheduleInfo[]> } | undefined;
    const read = () => {
      const now = Date.now();
      if (last === undefined || now - last.at > SNAPSHOT_TTL_MS) {
        const schedules = recurring.list().catch((error: unknown) => {
          logger.warn(`Could not read the @Recurring schedules for a scrape: ${describeError(error)}`);
          return [];
        });
        last = { at: now, schedules };
      }
      return last.schedules;
    };
    const gauge = (suffix: string, help: string, value: (schedule: RecurringScheduleInfo) => number | undefined) =>
      new prom.Gauge({
        name: this.name(suffix),
        help,
        labelNames: ['schedule', 'handled'],
        registers: [this.registry() as never],
        async collect() {
          const schedules = await read();
          this.reset();
          for (const schedule of schedules) {
            const at = value(schedule);
            if (at !== undefined) this.labels(schedule.name, String(schedule.handled)).set(at / 1000);
          }
        },
      });
    gauge(
      'recurring_last_success_timestamp_seconds',
      'When each @Recurring schedule last completed a run (Redis time); absent before its first success.',
      (schedule) => schedule.lastSuccessAt,
    );
    gauge(
      'recurring_next_run_timestamp_seconds',
      'The tick each @Recurring schedule runs next (or is running); handled="false": no process here runs it.',
      (schedule) => schedule.nextRunAt,
    );
  }

  onModuleDestroy(): void {
    for (const stop of this.unsubscribe.splice(0)) stop();
    for (const name of this.names.splice(0)) this.registry().removeSingleMetric(name);
  }

  private registry() {
    return this.options.registry ?? loadOptional<PromClient>('prom-client', 'QueueMetricsModule').register;
  }

  private name(suffix: string): string {
    const name = (this.options.prefix ?? METRICS_DEFAULTS.prefix) + suffix;
    this.names.push(name);
    return name;
  }

  private counter(prom: PromClient, suffix: string, help: string, labelNames = ['queue']): Counter<string> {
    return new prom.Counter({ name: this.name(suffix), help, labelNames, registers: [this.registry() as never] });
  }

  private histogram(
    prom: PromClient,
    suffix: string,
    help: string,
    buckets: number[],
    labelNames = ['queue'],
  ): Histogram<string> {
    return new prom.Histogram({
      name: this.name(suffix),
      help,
      labelNames,
      buckets,
      registers: [this.registry() as never],
    });
  }

  /** A gauge whose values are read from the queues' stats when it is collected. */
  private gauge(
    prom: PromClient,
    suffix: string,
    help: string,
    extraLabels: string[],
    read: (set: (value: number, ...labels: string[]) => void, queue: Snapshot) => void,
  ): void {
    const snapshot = () => this.read();
    const gauge: Gauge<string> = new prom.Gauge({
      name: this.name(suffix),
      help,
      labelNames: ['queue', ...extraLabels],
      registers: [this.registry() as never],
      async collect() {
        const queues = await snapshot();
        gauge.reset();
        for (const queue of queues) {
          // A queue whose stats could not be read has no sample rather than a stale one.
          if (queue.stats) read((value, ...labels) => gauge.labels(queue.name, ...labels).set(value), queue);
        }
      },
    });
  }

  private read(): Promise<Snapshot[]> {
    const now = Date.now();
    if (this.snapshot === undefined || now - this.snapshot.at > SNAPSHOT_TTL_MS) {
      const queues = Promise.all(
        this.queues.all().map(async ({ kind, name, queue }): Promise<Snapshot> => {
          try {
            return { kind, name, stats: await queue.stats() };
          } catch (error) {
            this.logger.warn(`Could not read the stats of queue "${name}" for a scrape: ${describeError(error)}`);
            return { kind, name };
          }
        }),
      );
      this.snapshot = { at: now, queues };
    }
    return this.snapshot.queues;
  }

  private listen<E extends QueueEventName>(event: E, listener: QueueEventListener<E>): void {
    this.unsubscribe.push(this.events.on(event, listener));
  }
}

/** The child of a metric per queue (and fixed extra labels), made once per queue. */
function children<C extends Counter<string> | Histogram<string>>(
  metric: C,
  ...labels: string[]
): (queue: string) => ReturnType<C['labels']> {
  const cache = new Map<string, ReturnType<C['labels']>>();
  return (queue) => {
    let child = cache.get(queue);
    if (child === undefined) {
      child = metric.labels(queue, ...labels) as ReturnType<C['labels']>;
      cache.set(queue, child);
    }
    return child;
  };
}
