import { Logger, type OnModuleDestroy } from '@nestjs/common';
import type { Counter, Histogram } from 'prom-client';
import type { QueueEvents } from '../events/queue-events';
import { loadOptional } from '../optional-dependency';
import type { ConsumerRegistry } from '../consumer/consumer.registry';
import type { QueueRegistry } from '../queue.registry';
import type { RecurringSchedules } from '../recurring/recurring-schedules';
import type { RedisConnection } from '../redis/redis-connection';
import type { QueueEventListener, QueueEventName, QueueMetricsOptions } from '../interfaces';
import { MetricFactory, type PromClient } from './metric-factory';
import { connectionRestarts, overdueGauge, processGauges, recurringGauges } from './process-gauges';
import type { QueueProcesses } from '../queue-processes';
import { queueStateGauges } from './queue-state-gauges';

const LATENESS_BUCKETS = [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 300];
const DURATION_BUCKETS = [0.001, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60];
const BATCH_SIZE_BUCKETS = [1, 2, 4, 8, 16, 32, 64, 128, 256, 512, 1024];

/**
 * The queues' Prometheus metrics. Counters and histograms count what this process did (sum them over
 * instances); they are fed by QueueEvents, so pushes are counted once per script call, not per message.
 * Gauges describe each whole queue as Redis holds it (every instance reports the same value: take the
 * max, not the sum); they are read with `stats()` when Prometheus scrapes, O(shards) per queue.
 */
export class QueueMetrics implements OnModuleDestroy {
  private readonly logger = new Logger('QueueMetrics');
  private readonly metrics: MetricFactory;
  private readonly unsubscribe: (() => void)[] = [];

  /** @internal Made by Nest (QueueMetricsModule), not by the application. */
  constructor(
    private readonly events: QueueEvents,
    queues: QueueRegistry,
    options: QueueMetricsOptions = {},
    recurring?: RecurringSchedules,
    consumers?: ConsumerRegistry,
    connection?: RedisConnection,
    processes?: QueueProcesses,
  ) {
    const metrics = (this.metrics = new MetricFactory(
      loadOptional<PromClient>('prom-client', 'QueueMetricsModule'),
      options,
    ));
    const { buckets = {} } = options;

    const pushed = metrics.counter('messages_pushed_total', 'Messages stored by pushes of this process.');
    const dropped = metrics.counter(
      'messages_dropped_total',
      'Older messages evicted at capacity by pushes of this process.',
    );
    const expired = metrics.counter(
      'messages_expired_total',
      'Messages discarded unread (maxAgeMs, ttlMs), as consumers of this process found them.',
    );
    const batches = metrics.counter('batches_total', 'Batches handled by consumers of this process, by outcome.', [
      'queue',
      'outcome',
    ]);
    const batchSize = metrics.histogram(
      'batch_size_messages',
      'Messages per batch handed to a consumer of this process.',
      buckets.batchSize ?? BATCH_SIZE_BUCKETS,
    );
    const scheduled = metrics.counter('tasks_scheduled_total', 'Tasks written by schedule() calls of this process.');
    const fired = metrics.counter('tasks_fired_total', 'Due tasks claimed by consumers of this process.');
    const completed = metrics.counter('tasks_completed_total', 'Tasks whose handler in this process succeeded.');
    const retried = metrics.counter(
      'tasks_retried_total',
      'Failed task attempts in this process that will be retried.',
    );
    const dead = metrics.counter(
      'tasks_dead_total',
      'Tasks dead-lettered after their last attempt failed in this process.',
    );
    const lateness = metrics.histogram(
      'task_lateness_seconds',
      'Time from a task being due to its claim, by Redis time.',
      buckets.lateness ?? LATENESS_BUCKETS,
    );
    const duration = metrics.histogram(
      'handler_duration_seconds',
      'Time spent in batch and task handlers, by outcome.',
      buckets.duration ?? DURATION_BUCKETS,
      ['queue', 'outcome'],
    );
    const timeouts = metrics.counter(
      'handler_timeouts_total',
      'Handlers of this process that ran past handlerTimeoutMs: each signal aborted and slot freed, its delivery held until it settles.',
    );
    const redeclared = metrics.counter(
      'state_redeclared_total',
      'What this process declared again after Redis lost it: a @Recurring schedule (what="recurring") or a queue record (what="queue").',
      ['queue', 'what'],
    );
    const restored = metrics.counter(
      'tasks_restored_total',
      "Listed tasks a pass of this process' task source wrote (missing ones, and those onExists replaced).",
    );
    const passes = metrics.counter('reconcile_passes_total', "Passes of this process' task sources, by trigger.", [
      'queue',
      'trigger',
    ]);
    const reconciledTasks = metrics.counter(
      'reconcile_tasks_total',
      "Tasks listed by this process' task sources, by outcome (restored, kept, swept, invalid).",
      ['queue', 'outcome'],
    );
    const passDuration = metrics.histogram(
      'reconcile_duration_seconds',
      "How long passes of this process' task sources took.",
      buckets.duration ?? DURATION_BUCKETS,
    );
    const lost = metrics.counter(
      'data_lost_total',
      'Times this process found a queue record gone that it had seen: the queue lost its data.',
    );
    const errors = metrics.counter(
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
    if (consumers) overdueGauge(metrics, queues, consumers);
    this.listen('state.redeclared', (e) => redeclared.labels(e.queue, e.what).inc());
    this.listen('queue.data-lost', (e) => lost.labels(e.queue).inc());
    this.listen('queue.reconciled', (e) => {
      restored.labels(e.queue).inc(e.restored);
      passes.labels(e.queue, e.trigger).inc();
      for (const outcome of ['restored', 'kept', 'swept', 'invalid'] as const)
        reconciledTasks.labels(e.queue, outcome).inc(e[outcome]);
      passDuration.labels(e.queue).observe(e.durationMs / 1000);
    });

    queueStateGauges(metrics, queues, this.logger);
    if (recurring) recurringGauges(metrics, recurring, this.logger);
    if (connection) connectionRestarts(metrics, connection);
    if (processes) processGauges(metrics, processes);
  }

  onModuleDestroy(): void {
    for (const stop of this.unsubscribe.splice(0)) stop();
    this.metrics.removeAll();
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
