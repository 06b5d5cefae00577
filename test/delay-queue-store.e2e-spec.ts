import { DelayQueueStore } from '../libs/queue/src/delay-queue/delay-queue.store';
import { QueueKeys } from '../libs/queue/src/redis/keys';
import { Scripts } from '../libs/queue/src/redis/scripts';
import type { DelayQueueOptionsRules } from '../libs/queue/src/validation/queue-options';
import { useQueueApps } from './support/fixtures';
import { rawClient } from './support/testing';

/** The store's reading of what its scripts answer: each reply decoded as the queue expects it. */
describe('DelayQueueStore reply decoding (real redis-server)', () => {
  const harness = useQueueApps({ client: rawClient });

  function store() {
    const rules = { shards: 1, leaseMs: 30_000, maxAttempts: 1, deadLetter: { capacity: 100 } };
    const keys = new QueueKeys(harness.prefix(), 'd', 1);
    return new DelayQueueStore(new Scripts(harness.redis), keys, rules as DelayQueueOptionsRules);
  }

  it("reads one result per scheduled task, and the state of a task that `onExists: 'keep'` kept", async () => {
    const tasks = store();
    const first = await tasks.schedule(0, [
      { id: 'a', json: '{"n":1}', time: ['in', 60_000], onExists: 'replace' },
      { id: 'b', json: '{"n":2}', time: ['in', 0], onExists: 'replace' },
    ]);
    expect(first.results).toEqual([
      { changed: true, runAt: first.serverNow + 60_000 },
      { changed: true, runAt: first.serverNow },
    ]);
    const kept = await tasks.schedule(0, [{ id: 'a', json: '{"n":3}', time: ['in', 0], onExists: 'keep' }]);
    expect(kept.results).toEqual([{ changed: false, runAt: first.serverNow + 60_000, state: 'scheduled' }]);
  });

  it('reads claimed tasks with their attempt, token, time and payload, and an empty shard as due at Infinity', async () => {
    const tasks = store();
    const { serverNow } = await tasks.schedule(0, [
      { id: 'now', json: '{"pet":"rex"}', time: ['in', 0], onExists: 'replace' },
      { id: 'later', json: '"x"', time: ['in', 60_000], onExists: 'replace' },
    ]);
    const claimed = await tasks.claim(0, 10);
    expect(claimed.tasks).toEqual([
      { id: 'now', attempt: 1, token: expect.any(String), runAt: serverNow, json: '{"pet":"rex"}' },
    ]);
    // Next due: the claimed task's lease ends (30 s) before 'later' is due (60 s).
    expect(claimed.nextDueAt).toBe(claimed.serverNow + 30_000);
    expect(await tasks.get(0, 'now')).toMatchObject({ state: 'active', attempts: 1, json: '{"pet":"rex"}' });
    expect(await tasks.ack(0, [{ id: 'now', token: claimed.tasks[0].token }])).toEqual([true]);
    expect(await tasks.ack(0, [{ id: 'now', token: claimed.tasks[0].token }])).toEqual([false]);
    expect(await tasks.cancel(0, 'later')).toBe(true);
    expect((await tasks.claim(0, 10)).nextDueAt).toBe(Infinity);
    expect(await tasks.get(0, 'later')).toBeNull();
  });

  it("reads a dead task's attempts, last run time and error", async () => {
    const tasks = store();
    const { serverNow } = await tasks.schedule(0, [
      { id: 'doomed', json: '[1]', time: ['in', 0], onExists: 'replace' },
    ]);
    const [task] = (await tasks.claim(0, 10)).tasks;
    expect(await tasks.fail(0, 'doomed', task.token, 0, 'Error: bowl is empty')).toMatchObject({ outcome: 'dead' });
    const [dead] = await tasks.dead(0, 10);
    expect(dead).toEqual({
      id: 'doomed',
      diedAt: expect.any(Number),
      state: 'dead',
      runAt: serverNow,
      attempts: 1,
      json: '[1]',
      lastError: 'Error: bowl is empty',
    });
    expect(dead.diedAt).toBeGreaterThanOrEqual(serverNow);
  });
});
