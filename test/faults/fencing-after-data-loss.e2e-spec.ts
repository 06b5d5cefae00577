import type { INestApplication } from '@nestjs/common';
import IORedis from 'ioredis';
import { DelayQueue, FixedQueue, getDelayQueueToken, getFixedQueueToken, QueueModule } from 'nestjs-redis-queues';
import { startRedis, type RedisServer } from '@test/support/faults';
import { createApp, uniquePrefix } from '@test/support/testing';

/**
 * A fencing token must tell apart every delivery a task ever had, including those Redis forgot:
 * after a FLUSHDB (or a restart without persistence, or a failover to a lagging replica) the worker
 * that ran the first delivery is still running, and its late calls must not touch the task
 * scheduled since.
 */
describe('fencing tokens survive Redis losing its data', () => {
  let server: RedisServer;
  let redis: IORedis;
  let app: INestApplication;
  let tasks: DelayQueue<{ run: number }>;
  let events: FixedQueue<{ run: number }>;

  beforeAll(async () => {
    // A server of its own: the test flushes it.
    server = await startRedis();
    redis = new IORedis(server.url);
    app = await createApp({
      imports: [
        QueueModule.forRoot({ connection: server.url, prefix: uniquePrefix(), consumers: false }),
        QueueModule.registerDelayQueue({ name: 'tasks', shards: 1, maxAttempts: 3 }),
        QueueModule.registerFixedQueue({ name: 'events', shards: 1, maxWaitMs: 0, delivery: 'at-least-once' }),
      ],
    });
    tasks = app.get(getDelayQueueToken('tasks'));
    events = app.get(getFixedQueueToken('events'));
  });

  afterAll(async () => {
    await app.close();
    redis.disconnect();
    await server.stop();
  });

  /** Delivers X once, loses every key, schedules X again and delivers it: the two deliveries' tokens. */
  async function deliveredTwiceAcrossDataLoss(): Promise<{ stale: string; current: string }> {
    await tasks.schedule({ run: 1 }, { id: 'X' });
    const first = await tasks.store.claim(0, 10);
    await redis.flushdb();
    await tasks.schedule({ run: 2 }, { id: 'X' });
    const second = await tasks.store.claim(0, 10);
    expect([first.tasks.length, second.tasks.length]).toEqual([1, 1]);
    expect(second.tasks[0]).toMatchObject({ id: 'X', attempt: 1 });
    return { stale: first.tasks[0].token, current: second.tasks[0].token };
  }

  afterEach(async () => {
    await redis.flushdb();
  });

  it("gives the new delivery another token, so the first delivery's ack leaves the new X alone", async () => {
    const { stale, current } = await deliveredTwiceAcrossDataLoss();
    expect(current).not.toBe(stale);
    expect(await tasks.store.ack(0, [{ id: 'X', token: stale }])).toEqual([{ completed: false }]);
    expect(await tasks.get('X')).toMatchObject({ state: 'active', attempts: 1, payload: { run: 2 } });
    expect(await tasks.store.ack(0, [{ id: 'X', token: current }])).toEqual([{ completed: true }]);
    expect(await tasks.get('X')).toBeNull();
  });

  it('refuses the first delivery its failure, heartbeat and hand-back too', async () => {
    const { stale, current } = await deliveredTwiceAcrossDataLoss();
    expect(await tasks.store.fail(0, 'X', stale, 1000, 'late failure')).toBeNull();
    expect(await tasks.store.extend(0, [{ id: 'X', token: stale }])).toEqual([false]);
    expect(await tasks.store.release(0, 'X', stale)).toBe(false);
    expect(await tasks.get('X')).toMatchObject({ state: 'active', attempts: 1, payload: { run: 2 } });
    expect(await tasks.get('X')).not.toHaveProperty('lastError');
    // The new delivery still holds the task: its failure is recorded and retried.
    expect(await tasks.store.fail(0, 'X', current, 0, 'boom')).toMatchObject({ fate: 'retry' });
    expect(await tasks.get('X')).toMatchObject({ state: 'scheduled', attempts: 1, lastError: 'boom' });
  });

  it("keeps a FixedQueue batch's first delivery from trimming the batch pushed since", async () => {
    await events.push('g', { run: 1 });
    const [stale] = (await events.store.take(0, 1, ['g'])).batches;
    await redis.flushdb();
    await events.pushMany('g', [{ run: 2 }, { run: 3 }]);
    const [current] = (await events.store.take(0, 1, ['g'])).batches;
    expect(current).toMatchObject({ attempt: 1, messages: [{ run: 2 }, { run: 3 }] });
    expect(current.token).not.toBe(stale.token);
    expect((await events.store.ack(0, [{ group: 'g', token: stale.token! }])).dueAt).toEqual([null]);
    expect(await events.size('g')).toBe(2);
    expect((await events.store.ack(0, [{ group: 'g', token: current.token! }])).dueAt).toEqual([-1]);
    expect(await events.size('g')).toBe(0);
  });
});
