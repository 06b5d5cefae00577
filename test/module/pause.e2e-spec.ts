/**
 * On memory:// some of these tests still wait for real time to pass (test/setup/on-memory.js).
 * @memory-clock system
 */
import { QueueConsumers, type QueuePauseEvent, QueueEvents, UnknownQueueError } from 'nestjs-redis-queues';
import { ConsumerRegistry } from '../../libs/queue/src/consumer/consumer.registry';
import type { QueueApp } from '@test/support/fixtures';
import { recordBatches, recordTasks, useQueueApps } from '@test/support/fixtures';
import { pollUntil } from '@test/support/testing';

const SHARDS = 4;
const fixedQueue = { name: 'reports', shards: SHARDS, capacity: 100_000, batchSize: 50, maxWaitMs: 20 };
const delayQueue = { name: 'timers', shards: SHARDS };
// Pollers sleep at most this long: paused ones come back often, so the tests see many paused claims quickly.
const root = { idlePollMs: 100 };

const batches = recordBatches<{ n: number }>('reports', { concurrency: 4 });
const tasks = recordTasks<{ n: number }>('timers', { concurrency: 8 });

/** Counts an app's claims (one per poll of a shard) and what they handed out, from now on. */
function watchClaims(queueApp: QueueApp, kind: 'fixed' | 'delay') {
  const registry = queueApp.app.get(ConsumerRegistry);
  const totals = () =>
    registry
      .statuses()
      .filter((status) => status.kind === kind)
      .reduce((sum, { claims, claimed }) => ({ claims: sum.claims + claims, handedOut: sum.handedOut + claimed }), {
        claims: 0,
        handedOut: 0,
      });
  const start = totals();
  return {
    get claims() {
      return totals().claims - start.claims;
    },
    get handedOut() {
      return totals().handedOut - start.handedOut;
    },
  };
}

describe('pause and resume', () => {
  const harness = useQueueApps();
  const start = (providers: unknown[] = [batches.consumer, tasks.consumer], prefix?: string, ordered = true) =>
    harness.start({
      prefix,
      root,
      fixed: [{ ...fixedQueue, ordered }],
      delay: [delayQueue],
      providers: providers as never,
    });

  it.each([
    ['ordered', true],
    ['unordered', false],
  ])(
    'FixedQueue (%s): no batch is claimed once pause() resolved, under load from two consumer apps; all is delivered after resume()',
    async (_, ordered) => {
      const producer = await start([], undefined, ordered);
      const consumers = [
        await start(undefined, producer.prefix, ordered),
        await start(undefined, producer.prefix, ordered),
      ];
      const queue = producer.fixed<{ n: number }>('reports');
      const events: QueuePauseEvent[] = [];
      producer.app.get(QueueEvents).on('queue.paused', (event) => events.push(event));
      producer.app.get(QueueEvents).on('queue.resumed', (event) => events.push(event));

      let pushed = 0;
      const pushSome = async (count: number) => {
        const writes: Promise<unknown>[] = [];
        for (let i = 0; i < count; i++, pushed++) writes.push(queue.push(`g${pushed % 40}`, { n: pushed }));
        await Promise.all(writes);
      };
      // Load under way: pushes keep going while the pause is taken.
      const load = (async () => {
        for (let round = 0; round < 20; round++) await pushSome(200);
      })();
      await batches.untilMessages(500);
      await queue.pause();
      const deliveredAtPause = (await queue.stats()).delivered;
      expect(await queue.isPaused()).toBe(true);
      const watched = consumers.map((app) => watchClaims(app, 'fixed'));
      await load;
      await pushSome(2000);

      // Each app polls every shard several times while paused (pushes wake them, idlePollMs bounds their sleep).
      await pollUntil(() => watched.every((seen) => seen.claims >= 3 * SHARDS), 'paused consumers to poll');
      // What was claimed before the pause is handled; nothing more.
      await batches.untilMessages(deliveredAtPause);
      expect(watched.map((seen) => seen.handedOut)).toEqual([0, 0]);
      const stats = await queue.stats();
      expect(stats.delivered).toBe(deliveredAtPause);
      expect(stats.pending).toBe(pushed - deliveredAtPause);
      expect(batches.messages()).toHaveLength(deliveredAtPause);

      await queue.resume();
      expect(await queue.isPaused()).toBe(false);
      await batches.untilMessages(pushed, 20_000);
      const delivered = batches.messages().map((message) => message.n);
      expect(new Set(delivered).size).toBe(pushed);
      expect((await queue.stats()).delivered).toBe(pushed);
      expect(events).toEqual([
        { queue: 'reports', kind: 'fixed' },
        { queue: 'reports', kind: 'fixed' },
      ]);
    },
  );

  it('DelayQueue: no task is claimed once pause() resolved, under load from two consumer apps; all run after resume()', async () => {
    const producer = await start([]);
    const consumers = [await start(undefined, producer.prefix), await start(undefined, producer.prefix)];
    const queue = producer.delay<{ n: number }>('timers');
    let scheduled = 0;
    const scheduleSome = async (count: number) => {
      const writes: Promise<unknown>[] = [];
      for (let i = 0; i < count; i++, scheduled++)
        writes.push(queue.schedule({ n: scheduled }, { id: `t${scheduled}` }));
      await Promise.all(writes);
    };
    const load = (async () => {
      for (let round = 0; round < 10; round++) await scheduleSome(200);
    })();
    await tasks.untilTasks(200);
    await queue.pause();
    const firedAtPause = (await queue.stats()).fired;
    const watched = consumers.map((app) => watchClaims(app, 'delay'));
    await load;
    await scheduleSome(500);

    await pollUntil(() => watched.every((seen) => seen.claims >= 3 * SHARDS), 'paused consumers to poll');
    await tasks.untilTasks(firedAtPause);
    expect(watched.map((seen) => seen.handedOut)).toEqual([0, 0]);
    const stats = await queue.stats();
    expect(stats.fired).toBe(firedAtPause);
    expect(stats.scheduled).toBe(scheduled - firedAtPause);
    expect(tasks.tasks).toHaveLength(firedAtPause);

    await queue.resume();
    await tasks.untilTasks(scheduled, 20_000);
    expect(new Set(tasks.ids()).size).toBe(scheduled);
    expect((await queue.stats()).fired).toBe(scheduled);
  });

  it('a consumer started after the pause stays paused until resume()', async () => {
    const producer = await start([]);
    await producer.fixed('reports').pause();
    await producer.delay('timers').pause();
    for (let i = 0; i < 30; i++) await producer.fixed('reports').push(`g${i}`, { n: i });
    for (let i = 0; i < 30; i++) await producer.delay('timers').schedule({ n: i }, { id: `t${i}` });

    const consumer = await start(undefined, producer.prefix);
    const fixed = watchClaims(consumer, 'fixed');
    const delay = watchClaims(consumer, 'delay');
    await pollUntil(() => fixed.claims >= 2 * SHARDS && delay.claims >= 2 * SHARDS, 'the new consumer to poll');
    expect([fixed.handedOut, delay.handedOut]).toEqual([0, 0]);
    expect(batches.batches).toHaveLength(0);
    expect(tasks.tasks).toHaveLength(0);

    await producer.fixed('reports').resume();
    await producer.delay('timers').resume();
    await batches.untilMessages(30);
    await tasks.untilTasks(30);
  });

  it("pauseConsumers holds only this process' consumers; the other process takes everything", async () => {
    const held = await start();
    const other = await start(undefined, held.prefix);
    const consumers = held.app.get(QueueConsumers);
    consumers.pauseConsumers('reports');
    consumers.pauseConsumers('timers');
    expect(consumers.consumersPaused('reports')).toBe(true);
    const heldClaims = [watchClaims(held, 'fixed'), watchClaims(held, 'delay')];
    const otherClaims = [watchClaims(other, 'fixed'), watchClaims(other, 'delay')];

    for (let i = 0; i < 50; i++) await held.fixed('reports').push(`g${i}`, { n: i });
    for (let i = 0; i < 50; i++) await held.delay('timers').schedule({ n: i }, { id: `t${i}` });
    await batches.untilMessages(50);
    await tasks.untilTasks(50);
    expect(heldClaims.map((seen) => seen.claims)).toEqual([0, 0]);
    expect(otherClaims.every((seen) => seen.handedOut > 0)).toBe(true);
    expect(await held.fixed('reports').isPaused()).toBe(false);

    consumers.resumeConsumers('reports');
    consumers.resumeConsumers('timers');
    await pollUntil(() => heldClaims.every((seen) => seen.claims > 0), 'the resumed consumers to poll');
    expect(() => consumers.pauseConsumers('nope')).toThrow(UnknownQueueError);
  });
});
