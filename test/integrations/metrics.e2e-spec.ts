import type { Type } from '@nestjs/common';
import { Registry } from 'prom-client';
import { QueueMetricsModule } from 'nestjs-redis-queues';
import { CapturedLogs } from '@test/support/faults';
import { recordBatches, recordTasks, useQueueApps } from '@test/support/fixtures';
import { pollUntil } from '@test/support/testing';

const consumers = [
  recordBatches('events').consumer,
  recordTasks<{ fail?: boolean }>('tasks', { concurrency: 4 }, (payload) => {
    if (payload.fail) throw new Error('cannot feed');
  }).consumer,
];

/** The samples of Prometheus' text format, by `name{labels}` as written. */
function samples(text: string): Map<string, number> {
  const found = new Map<string, number>();
  for (const line of text.split('\n')) {
    if (line === '' || line.startsWith('#')) continue;
    const at = line.lastIndexOf(' ');
    found.set(line.slice(0, at), Number(line.slice(at + 1)));
  }
  return found;
}

/** Scrapes `registry` until its samples satisfy `ready`, and returns them. */
function scrapeUntil(registry: Registry, ready: (now: Map<string, number>) => boolean, what: string) {
  return pollUntil(async () => {
    const now = samples(await registry.metrics());
    return ready(now) ? now : undefined;
  }, what);
}

describe('QueueMetricsModule (prom-client)', () => {
  const harness = useQueueApps();

  async function start(registry: Registry, providers: Type[] = consumers) {
    const { app, fixed, delay } = await harness.start({
      root: { idlePollMs: 500 },
      fixed: [
        { name: 'events', shards: 2, capacity: 5, batchSize: 5, maxWaitMs: 20 },
        { name: 'idle', shards: 2, maxWaitMs: 20 },
      ],
      delay: [{ name: 'tasks', shards: 2, maxAttempts: 2, backoff: { type: 'fixed', delayMs: 50 } }],
      imports: [QueueMetricsModule.register({ registry })],
      providers,
      logger: new CapturedLogs(),
    });
    return {
      app,
      events: fixed<{ n: number }>('events'),
      idle: fixed<{ n: number }>('idle'),
      tasks: delay<{ fail?: boolean }>('tasks'),
    };
  }

  it('counts a known workload, per queue, in Prometheus names and units', async () => {
    const registry = new Registry();
    const { events, tasks } = await start(registry);
    // 8 messages into a group of capacity 5 in one turn (3 dropped), 1 into another: 2 batches, 6 messages.
    await Promise.all([
      ...Array.from({ length: 8 }, (_, n) => events.push('full', { n })),
      events.push('calm', { n: 0 }),
    ]);
    // One task succeeds; one fails, is retried once, and dies.
    await Promise.all([tasks.schedule({}, { id: 'ok' }), tasks.schedule({ fail: true }, { id: 'doomed' })]);

    const metrics = await scrapeUntil(
      registry,
      (now) =>
        now.get('nrq_tasks_dead_total{queue="tasks"}') === 1 &&
        now.get('nrq_batches_total{queue="events",outcome="completed"}') === 2,
      'the workload to be counted',
    );

    expect(metrics.get('nrq_messages_pushed_total{queue="events"}')).toBe(9);
    expect(metrics.get('nrq_messages_dropped_total{queue="events"}')).toBe(3);
    expect(metrics.get('nrq_batch_size_messages_count{queue="events"}')).toBe(2);
    expect(metrics.get('nrq_batch_size_messages_sum{queue="events"}')).toBe(6);
    expect(metrics.get('nrq_batch_size_messages_bucket{le="4",queue="events"}')).toBe(1);
    expect(metrics.get('nrq_batch_size_messages_bucket{le="8",queue="events"}')).toBe(2);
    expect(metrics.get('nrq_tasks_scheduled_total{queue="tasks"}')).toBe(2);
    expect(metrics.get('nrq_tasks_fired_total{queue="tasks"}')).toBe(3);
    expect(metrics.get('nrq_tasks_completed_total{queue="tasks"}')).toBe(1);
    expect(metrics.get('nrq_tasks_retried_total{queue="tasks"}')).toBe(1);
    expect(metrics.get('nrq_task_lateness_seconds_count{queue="tasks"}')).toBe(3);
    expect(metrics.get('nrq_task_lateness_seconds_bucket{le="+Inf",queue="tasks"}')).toBe(3);
    expect(metrics.get('nrq_handler_duration_seconds_count{queue="tasks",outcome="completed"}')).toBe(1);
    expect(metrics.get('nrq_handler_duration_seconds_count{queue="tasks",outcome="failed"}')).toBe(2);
    expect(metrics.get('nrq_handler_duration_seconds_count{queue="events",outcome="completed"}')).toBe(2);
    // The wake-up subscriber answered its PINGs: never reconnected.
    expect(metrics.get('nrq_subscriber_restarts_total')).toBe(0);
    expect(metrics.get('nrq_connection_restarts_total')).toBe(0);
    // Nothing of a queue that saw no such activity.
    expect([...metrics.keys()].filter((key) => key.startsWith('nrq_messages_pushed_total'))).toEqual([
      'nrq_messages_pushed_total{queue="events"}',
    ]);
  });

  it('reads backlog gauges from Redis when scraped', async () => {
    const registry = new Registry();
    const { idle, tasks } = await start(registry, []);
    await Promise.all([idle.pushMany('a', [{ n: 1 }, { n: 2 }]), idle.push('b', { n: 3 })]);
    await Promise.all([idle.pauseGroup('held'), idle.pauseGroup('also-held')]);
    await Promise.all([tasks.schedule({}, { id: 'later', delayMs: 3_600_000 }), tasks.schedule({}, { id: 'now' })]);

    // No consumer: 'idle' is due after maxWaitMs (20 ms) and waits on; so does the due task.
    const metrics = await scrapeUntil(
      registry,
      (now) =>
        (now.get('nrq_oldest_due_lag_seconds{queue="idle"}') ?? 0) > 0 &&
        (now.get('nrq_oldest_due_lag_seconds{queue="tasks"}') ?? 0) > 0,
      'the lag to show',
    );
    expect(metrics.get('nrq_messages_pending{queue="idle"}')).toBe(3);
    expect(metrics.get('nrq_groups{queue="idle"}')).toBe(2);
    expect(metrics.get('nrq_messages_dead{queue="idle"}')).toBe(0);
    expect(metrics.get('nrq_groups_paused{queue="idle"}')).toBe(2);
    expect(metrics.get('nrq_groups_paused{queue="events"}')).toBe(0);
    expect(metrics.get('nrq_messages_pending{queue="events"}')).toBe(0);
    expect(metrics.get('nrq_tasks{queue="tasks",state="scheduled"}')).toBe(2);
    expect(metrics.get('nrq_tasks{queue="tasks",state="active"}')).toBe(0);
    expect(metrics.get('nrq_tasks_due{queue="tasks"}')).toBe(1);
    expect(metrics.get('nrq_deliveries_given_back{queue="tasks"}')).toBe(0);
    expect(metrics.get('nrq_oldest_due_lag_seconds{queue="idle"}')).toBeLessThan(60);
    expect(metrics.get('nrq_oldest_due_lag_seconds{queue="events"}')).toBe(0);
    expect(await registry.getMetricsAsJSON()).toEqual(
      expect.arrayContaining([
        expect.objectContaining({ name: 'nrq_tasks', type: 'gauge' }),
        expect.objectContaining({ name: 'nrq_task_lateness_seconds', type: 'histogram' }),
      ]),
    );
  });

  it('takes its metrics out of the registry on close, so another application can register them', async () => {
    const registry = new Registry();
    const first = await start(registry, []);
    await harness.close(first.app);
    expect(registry.getSingleMetric('nrq_messages_pushed_total')).toBeUndefined();
    const second = await start(registry, []);
    await second.events.push('g', { n: 1 });
    expect(samples(await registry.metrics()).get('nrq_messages_pushed_total{queue="events"}')).toBe(1);
  });
});
