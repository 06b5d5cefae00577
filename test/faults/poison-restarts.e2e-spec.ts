import { useQueueApps } from '@test/support/fixtures';
import { pollUntil } from '@test/support/testing';
import { useWorkerProcesses } from '@test/support/worker-processes';

/**
 * A poison handler (hangs, ignores its signal) in a process that SIGTERM restarts, as rolling deploys
 * and liveness probes do: each restart gives its work back past handlerTimeoutMs, which counts.
 */
describe('attempts across SIGTERM restarts of a consumer process', () => {
  const harness = useQueueApps();
  const workers = useWorkerProcesses();

  it('delivers a poison batch and task at attempts 1, 2, 3, then dead-letters both', async () => {
    const prefix = harness.prefix();
    const logKey = `${prefix}:log`;
    const env = workers.env({ PREFIX: prefix, LOG_KEY: logKey });
    const producer = await harness.start({
      prefix,
      root: { consumers: false },
      fixed: [{ name: 'events', shards: 1, maxWaitMs: 0, delivery: 'at-least-once', maxAttempts: 3 }],
      delay: [{ name: 'jobs', shards: 1, maxAttempts: 3 }],
    });
    const events = producer.fixed<{ n: number }>('events');
    const jobs = producer.delay<{ n: number }>('jobs');
    await events.push('poison', { n: 0 });
    await jobs.schedule({ n: 0 }, { id: 'poison' });
    const lines = () => harness.redis.lrange(logKey, 0, -1);

    for (let attempt = 1; attempt <= 3; attempt++) {
      const worker = await workers.spawn('poison-worker.js', env);
      await pollUntil(async () => {
        const seen = await lines();
        return seen.includes(`timeout|events|${attempt}`) && seen.includes(`timeout|jobs|${attempt}`);
      }, `both handlers of attempt ${attempt} past handlerTimeoutMs`);
      await workers.stop(worker, 'SIGTERM');
    }
    await workers.spawn('poison-worker.js', env);
    await pollUntil(
      async () => (await events.deadLetters()).length === 1 && (await jobs.get('poison'))?.state === 'dead',
      'both dead-lettered by the fourth process',
    );
    const starts = (await lines()).filter((line) => line.startsWith('start|')).sort();
    expect(starts).toEqual([
      'start|events|1',
      'start|events|2',
      'start|events|3',
      'start|jobs|1',
      'start|jobs|2',
      'start|jobs|3',
    ]);
    expect(await events.stats()).toMatchObject({ givenBack: 3, redelivered: 2, deadTotal: 1 });
    expect(await jobs.stats()).toMatchObject({ givenBack: 3, deadTotal: 1, fired: 3 });
    await harness.redis.del(logKey);
  });
});
