import type { Logger } from '@nestjs/common';
import type { Gauge } from 'prom-client';
import type { ConsumerRegistry } from '../consumer/consumer.registry';
import type { RecurringScheduleInfo } from '../interfaces';
import type { QueueProcesses } from '../queue-processes';
import type { QueueRegistry } from '../queue.registry';
import type { RecurringSchedules } from '../recurring/recurring-schedules';
import type { RedisConnection } from '../redis/redis-connection';
import { describeError } from '../utils/errors';
import { onePerScrape, type MetricFactory } from './metric-factory';

/** How often this process' connections were found silent and connected again (process-wide counters). */
export function connectionRestarts(metrics: MetricFactory, connection: RedisConnection): void {
  new metrics.prom.Counter({
    name: metrics.name('subscriber_restarts_total'),
    help: "Times this process' wake-up subscriber connection missed its PING deadline and was connected again.",
    registers: metrics.registers,
    collect() {
      this.reset();
      this.inc(connection.subscriberStatus()?.restarts ?? 0);
    },
  });
  new metrics.prom.Counter({
    name: metrics.name('connection_restarts_total'),
    help: "Times one of this process' command connections (a Cluster node's) heard nothing while a reply was due and was replaced.",
    registers: metrics.registers,
    collect() {
      this.reset();
      this.inc(connection.commandRestarts());
    },
  });
}

/**
 * Handlers of this process past their handlerTimeoutMs and still running, each holding its group or
 * task (sum over instances, like the counters): read from the consumers, no call to Redis.
 */
export function overdueGauge(metrics: MetricFactory, queues: QueueRegistry, consumers: ConsumerRegistry): void {
  const gauge: Gauge<string> = new metrics.prom.Gauge({
    name: metrics.name('handlers_overdue'),
    help: 'Handlers of this process past handlerTimeoutMs that have not settled; each still holds its group or task.',
    labelNames: ['queue'],
    registers: metrics.registers,
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
export function recurringGauges(metrics: MetricFactory, recurring: RecurringSchedules, logger: Logger): void {
  const read = onePerScrape(() =>
    recurring.list().catch((error: unknown) => {
      logger.warn(`Could not read the @Recurring schedules for a scrape: ${describeError(error)}`);
      return [] as RecurringScheduleInfo[];
    }),
  );
  const gauge = (suffix: string, help: string, value: (schedule: RecurringScheduleInfo) => number | undefined) =>
    new metrics.prom.Gauge({
      name: metrics.name(suffix),
      help,
      labelNames: ['schedule', 'handled'],
      registers: metrics.registers,
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

/**
 * The processes live under the prefix by library version (every process reports the same values: a
 * deploy under way shows two versions), and the data contract this one keeps to: read from its last
 * announcement, no call to Redis.
 */
export function processGauges(metrics: MetricFactory, processes: QueueProcesses): void {
  new metrics.prom.Gauge({
    name: metrics.name('processes'),
    help: 'Processes of the application live under the prefix (announced within the last 15 s), by library version.',
    labelNames: ['version'],
    registers: metrics.registers,
    collect() {
      this.reset();
      for (const [version, count] of Object.entries(processes.versions())) this.labels(version).set(count);
    },
  });
  new metrics.prom.Gauge({
    name: metrics.name('data_contract'),
    help: "The data contract this process keeps to: an earlier one while a process of an earlier version is live (dataContract: 'auto').",
    registers: metrics.registers,
    collect() {
      this.set(processes.contract);
    },
  });
}
