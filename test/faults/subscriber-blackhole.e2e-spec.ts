import { Registry } from 'prom-client';
import { QueueHealthIndicator, QueueMetricsModule, type SubscriberHealthDetails } from 'nestjs-redis-queues';
import { recordBatches, recordTasks, useQueueApps } from '@test/support/fixtures';
import { CapturedLogs } from '@test/support/faults';
import { useProxiedRedis } from '@test/support/redis-proxy';
import { pollUntil } from '@test/support/testing';

const batches = recordBatches<{ n: number }>('events');
const tasks = recordTasks<{ n: number }>('timers');

/**
 * Idle consumers sleep up to idlePollMs (60 s by default) and wake on hints. A subscriber connection
 * silently dead (traffic dropped, socket open) delivered no hint and was never noticed: work pushed or
 * scheduled after it died waited 27-60 s. The subscriber is now pinged with a deadline: a missed one
 * reconnects it and makes every consumer poll all its shards.
 */
describe('a black-holed subscriber connection', () => {
  const harness = useQueueApps();
  const redis = useProxiedRedis();

  it('is noticed within seconds: work pushed or scheduled after it died is handed out, one warning, health says so', async () => {
    const logs = new CapturedLogs();
    const registry = new Registry();
    const { app, fixed, delay } = await harness.start({
      connection: redis.url,
      fixed: [{ name: 'events', shards: 2, maxWaitMs: 0 }],
      delay: [{ name: 'timers', shards: 2 }],
      providers: [batches.consumer, tasks.consumer],
      imports: [QueueMetricsModule.register({ registry })],
      logger: logs,
    });
    const health = app.get(QueueHealthIndicator);
    const subscriber = async () =>
      (await health.isHealthy('queues')).queues.subscriber as SubscriberHealthDetails | undefined;
    // Both consumers polled at start; once a hint has come through, they sleep until the next hint.
    await fixed('events').push('warm', { n: 0 });
    await batches.untilMessages(1);
    expect((await subscriber())?.state).toBe('connected');

    redis.proxy.blackHoleSubscribers(true);
    await fixed('events').push('after', { n: 1 });
    await delay('timers').schedule({ n: 1 }, { id: 'after' });
    // Before: 27-60 s (a consumer's idle poll). After: the missed PING is noticed within about 5 s.
    await batches.untilMessages(2, 10_000);
    await tasks.untilTasks(1, 10_000);

    // While every new subscriber connection is black-holed too, it is reconnected again and again,
    // with one warning for the whole outage.
    await pollUntil(async () => ((await subscriber())?.restarts ?? 0) >= 2, 'a second reconnection', 15_000);
    expect((await subscriber())?.state).toBe('stalled');
    expect(logs.find('warn', /Redis subscriber: no reply to PING/)).toHaveLength(1);
    const restarts = async () =>
      (await registry.getSingleMetric('nrq_subscriber_restarts_total')!.get()).values[0].value;
    expect(await restarts()).toBeGreaterThanOrEqual(2);

    redis.proxy.blackHoleSubscribers(false);
    await pollUntil(async () => (await subscriber())?.state === 'connected', 'the subscriber to answer again', 15_000);
    expect(logs.find('log', /Redis subscriber: answering again/)).toHaveLength(1);
    // Hints flow again: a push is handed out at once, not at the next idle poll.
    await fixed('events').push('healed', { n: 2 });
    await batches.untilMessages(3, 5_000);
  });
});
