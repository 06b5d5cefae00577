import type { Logger } from '@nestjs/common';
import type { Gauge } from 'prom-client';
import type { DelayQueueStats, FixedQueueStats, QueueKind } from '../interfaces';
import type { QueueRegistry } from '../queue.registry';
import type { RecordState } from '../redis/queue-meta';
import { describeError } from '../utils/errors';
import { onePerScrape, type MetricFactory } from './metric-factory';

interface Snapshot {
  kind: QueueKind;
  name: string;
  stats?: FixedQueueStats | DelayQueueStats;
  record?: RecordState;
}

type Set = (value: number, ...labels: string[]) => void;

/** FixedQueue gauges, each one number of its stats. */
const FIXED_GAUGES: [suffix: string, help: string, stat: 'pending' | 'groups' | 'pausedGroups' | 'dead'][] = [
  ['messages_pending', 'Messages held in the queue (all groups), in Redis.', 'pending'],
  ['groups', 'Groups holding messages, in Redis.', 'groups'],
  ['groups_paused', 'Groups paused (pauseGroup), whose messages wait for resumeGroup, in Redis.', 'pausedGroups'],
  ['messages_dead', 'Messages in dead batches now (at-least-once FixedQueue), in Redis.', 'dead'],
];

/**
 * Gauges describing each whole queue as Redis holds it (every instance reports the same value: take
 * the max, not the sum), read with `stats()` and one HMGET of the queue's record when Prometheus
 * scrapes, O(shards) per queue.
 */
export function queueStateGauges(metrics: MetricFactory, queues: QueueRegistry, logger: Logger): void {
  const read = onePerScrape(() =>
    Promise.all(
      queues.all().map(async ({ kind, name, queue }): Promise<Snapshot> => {
        try {
          const [stats, record] = await Promise.all([queue.stats(), queue.record.state()]);
          return { kind, name, stats, record };
        } catch (error) {
          logger.warn(`Could not read the stats of queue "${name}" for a scrape: ${describeError(error)}`);
          return { kind, name };
        }
      }),
    ),
  );
  const gauge = (suffix: string, help: string, extraLabels: string[], set: (set: Set, queue: Snapshot) => void) => {
    const made: Gauge<string> = new metrics.prom.Gauge({
      name: metrics.name(suffix),
      help,
      labelNames: ['queue', ...extraLabels],
      registers: metrics.registers,
      async collect() {
        const snapshots = await read();
        made.reset();
        for (const queue of snapshots) {
          // A queue whose stats could not be read has no sample rather than a stale one.
          if (queue.stats) set((value, ...labels) => made.labels(queue.name, ...labels).set(value), queue);
        }
      },
    });
  };

  for (const [suffix, help, stat] of FIXED_GAUGES)
    gauge(suffix, help, [], (set, { kind, stats }) => {
      if (kind === 'fixed') set((stats as FixedQueueStats)[stat]);
    });
  gauge('tasks', 'Tasks in Redis, by state (scheduled, active, dead).', ['state'], (set, { kind, stats }) => {
    if (kind !== 'delay') return;
    const { scheduled: waiting, active, dead: buried } = stats as DelayQueueStats;
    set(waiting, 'scheduled');
    set(active, 'active');
    set(buried, 'dead');
  });
  gauge(
    'deliveries_given_back',
    'Deliveries given back unfinished at shutdown, ever (stats().givenBack), in Redis: one growing with each restart never finishes.',
    [],
    (set, { stats }) => set(stats!.givenBack),
  );
  gauge('tasks_due', 'Scheduled tasks already due, waiting for a consumer.', [], (set, { kind, stats }) => {
    if (kind === 'delay') set((stats as DelayQueueStats).due);
  });
  gauge(
    'oldest_due_lag_seconds',
    'How long the most overdue group or task has waited past its due time, by Redis time.',
    [],
    (set, { stats }) => set(stats!.lagMs / 1000),
  );
  gauge(
    'data_loss_unacknowledged',
    'Whether the queue lost its data and nobody dealt with it yet (1): until a pass of its task source or acknowledgeDataLoss().',
    [],
    (set, { record }) => set(record!.lostAt === undefined ? 0 : 1),
  );
}
