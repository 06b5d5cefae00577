import { DelayQueueStore } from '../../libs/queue/src/delay-queue/delay-queue.store';
import { QueueKeys } from '../../libs/queue/src/redis/keys';
import { Scripts } from '../../libs/queue/src/redis/scripts';
import type { DelayQueueOptionsRules } from '../../libs/queue/src/validation/delay-queue-options';
import { useQueueApps } from '@test/support/fixtures';
import { rawClient } from '@test/support/testing';

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
      { id: 'now', attempt: 1, token: expect.any(String), runAt: serverNow, dueAt: serverNow, json: '{"pet":"rex"}' },
    ]);
    // Next due: the claimed task's lease ends (30 s) before 'later' is due (60 s).
    expect(claimed.nextDueAt).toBe(claimed.serverNow + 30_000);
    expect(await tasks.get(0, 'now')).toMatchObject({ state: 'active', attempts: 1, json: '{"pet":"rex"}' });
    expect(await tasks.ack(0, [{ id: 'now', token: claimed.tasks[0].token }])).toEqual([{ completed: true }]);
    expect(await tasks.ack(0, [{ id: 'now', token: claimed.tasks[0].token }])).toEqual([{ completed: false }]);
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
    expect(await tasks.fail(0, 'doomed', task.token, 0, 'Error: bowl is empty')).toMatchObject({ fate: 'dead' });
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

  it("keeps a debounced task's window through a traced move, and its claim hands out the payload without it", async () => {
    const tasks = store();
    const carrier = '00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01';
    const debounced = { onExists: 'replace' as const, maxWaitMs: 1_800_000 };
    const { results } = await tasks.schedule(0, [
      { id: 'd', json: `0,"${carrier}",{"n":1}`, time: ['in', 600_000], ...debounced },
    ]);
    const opened = results[0].runAt - 600_000;
    await tasks.move(0, 'd', 'at', opened + 7_200_000, carrier.replace('-01', '-00'));
    const capped = await tasks.schedule(0, [
      { id: 'd', json: '{"n":2}', time: ['at', opened + 3_600_000], ...debounced },
    ]);
    expect(capped.results).toEqual([{ changed: true, runAt: opened + 1_800_000 }]);
    await tasks.move(0, 'd', 'at', 0, carrier);
    expect(await tasks.get(0, 'd')).toMatchObject({ state: 'scheduled', json: `1,${opened},0,"${carrier}",{"n":2}` });
    const [claimed] = (await tasks.claim(0, 10)).tasks;
    expect(claimed.json).toBe(`0,"${carrier}",{"n":2}`);
    expect(await tasks.get(0, 'd')).toMatchObject({ state: 'active', json: claimed.json });
  });

  it('stores the window of a debounced task in its payload, about 16 bytes a task', async () => {
    const count = 1000;
    const bytesPerTask = async (maxWaitMs?: number) => {
      const tasks = store();
      const items = Array.from({ length: count }, (_, i) => ({
        id: `task-${i}`,
        json: JSON.stringify({ pet: `pet-${i}`, meal: 'kibble', due: 1_764_000_000_000 + i }),
        time: ['in', 3_600_000] as ['in', number],
        onExists: 'replace' as const,
        maxWaitMs,
      }));
      await tasks.schedule(0, items);
      let bytes = 0;
      for (const kind of ['due', 'data'] as const)
        bytes += Number(await harness.redis.call('MEMORY', 'USAGE', tasks.keys.key(0, kind), 'SAMPLES', '0'));
      return bytes / count;
    };
    const plain = await bytesPerTask();
    const debounced = await bytesPerTask(1_800_000);
    // '1,<13 digits>,' in front of the payload: 16 bytes (a hash of its own would cost about 64 a task).
    expect(debounced - plain).toBeGreaterThan(0);
    expect(debounced - plain).toBeLessThanOrEqual(24);
  });
});
