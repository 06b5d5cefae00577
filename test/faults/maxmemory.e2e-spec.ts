import IORedis from 'ioredis';
import { QueueMemoryError, type DelayQueue, type FixedQueue } from 'nestjs-redis-queues';
import { QueueKeys } from '../../libs/queue/src/redis/keys';
import { fixedExpire } from '../../libs/queue/src/fixed-queue/lua/fixed-expire';
import { invoke } from '../../libs/queue/src/redis/script-protocol';
import { fixedShardKeys } from '../../libs/queue/src/fixed-queue/fixed-queue.keys';
import { FIXED_QUEUE_SCRIPTS } from '../../libs/queue/src/fixed-queue/lua/fixed-queue.scripts';
import { Scripts } from '../../libs/queue/src/redis/scripts';
import { recordBatches, recordTasks, useQueueApps } from '@test/support/fixtures';
import { startRedis, type RedisServer } from '@test/support/faults';
import { deferred, pollUntil, uniquePrefix } from '@test/support/testing';

interface Message {
  n: number;
  pad: string;
}

const PAD = 'x'.repeat(200);

/** Fails the first attempt of 'flaky' and every attempt of 'poison': the retry and dead-letter paths. */
function failing(name: string, attempt: number): void {
  if (name === 'poison' || (name === 'flaky' && attempt === 1)) throw new Error(`${name} fails attempt ${attempt}`);
}

const atMostOnce = recordBatches<Message>('ordered-at-most-once');
const atLeastOnce = recordBatches<Message>('ordered-at-least-once', {}, (_, ctx) => failing(ctx.group, ctx.attempt));
const unordered = recordBatches<Message>('unordered');
const tasks = recordTasks<Message>('tasks', {}, (_, ctx) => failing(ctx.id, ctx.attempt));
let gate = deferred();
const longBatches = recordBatches<Message>('long-batches', {}, () => gate.promise);
const longTasks = recordTasks<Message>('long-tasks', {}, () => gate.promise);

/**
 * Redis at maxmemory under noeviction refuses what may grow memory. Producers must be refused, with
 * nothing partly written; consumers must still claim, acknowledge, retry and bury, since draining is
 * the only way the queues give memory back.
 */
describe('a full Redis (maxmemory, noeviction)', () => {
  const harness = useQueueApps();
  let server: RedisServer;
  let admin: IORedis;

  beforeAll(async () => {
    server = await startRedis({ extraArgs: ['--maxmemory-policy', 'noeviction'] });
    admin = new IORedis(server.url);
  });
  afterEach(async () => {
    gate.resolve();
    await admin.config('SET', 'maxmemory', '0');
  });
  afterAll(async () => {
    await admin.quit();
    await server.stop();
  });

  const usedMemory = async () => Number(/used_memory:(\d+)/.exec(await admin.info('memory'))![1]);
  const refusal = (call: Promise<unknown>) =>
    call.then(
      () => undefined,
      (error: unknown) => error,
    );

  it('is drained by the consumers of every kind, retries and dead letters included; writes stay refused', async () => {
    const queues = {
      fixed: [
        { name: 'ordered-at-most-once', shards: 2, maxWaitMs: 0, capacity: 100_000 },
        {
          name: 'ordered-at-least-once',
          shards: 2,
          maxWaitMs: 0,
          capacity: 100_000,
          delivery: 'at-least-once' as const,
          maxAttempts: 2,
          backoff: { type: 'exponential' as const, delayMs: 10 },
        },
        { name: 'unordered', shards: 2, maxWaitMs: 0, capacity: 100_000, ordered: false },
      ],
      delay: [{ name: 'tasks', shards: 2, maxAttempts: 2, backoff: { type: 'fixed' as const, delayMs: 10 } }],
    };
    const producer = await harness.start({ connection: server.url, ...queues });
    const prefix = producer.prefix;
    const fixed = ['ordered-at-most-once', 'ordered-at-least-once', 'unordered'].map((name) =>
      producer.fixed<Message>(name),
    );
    const timers: DelayQueue<Message> = producer.delay<Message>('tasks');
    const retried: FixedQueue<Message> = fixed[1];
    await retried.push('flaky', { n: -1, pad: PAD });
    await retried.push('poison', { n: -2, pad: PAD });
    await timers.schedule({ n: -1, pad: PAD }, { id: 'flaky' });
    await timers.schedule({ n: -2, pad: PAD }, { id: 'poison' });
    await timers.schedule({ n: -4, pad: PAD }, { id: 'later', delayMs: 3_600_000 });
    const repeated = await timers.repeat('every-50ms', { everyMs: 50 }, { n: -3, pad: PAD });

    // Filled until Redis refuses: a few MB above what is in use, so it is quick.
    await admin.config('SET', 'maxmemory', String((await usedMemory()) + 3 * 1024 * 1024));
    const pushed = [0, 0, 0];
    let scheduled = 0;
    for (let round = 0; ; round++) {
      const group = `g${round % 16}`;
      const batch = Array.from({ length: 20 }, (_, i) => ({ n: round * 20 + i, pad: PAD }));
      const calls = [
        ...fixed.map((queue, q) => queue.pushMany(group, batch).then(() => (pushed[q] += batch.length))),
        // Each counted alone: the schedules of a tick go in one call per shard, some may pass.
        ...batch.map((task) => timers.schedule(task, { id: `t${task.n}` }).then(() => scheduled++)),
      ];
      const refused = (await Promise.all(calls.map(refusal))).filter((error) => error !== undefined);
      if (refused.length === 0) continue;
      for (const error of refused) expect(error).toBeInstanceOf(QueueMemoryError);
      break;
    }
    expect(Math.min(...pushed, scheduled)).toBeGreaterThan(0);
    // Full for good: whatever the consumers free, every one of their calls runs at maxmemory.
    await admin.config('SET', 'maxmemory', '1');
    const full = await usedMemory();

    // Every producer write is refused, and none of it is written.
    const keysBefore = await admin.dbsize();
    const sizeBefore = await fixed[0].size('g0');
    const replaced = await timers.get('t0');
    // One at a time: schedules made in one tick share a script call.
    for (const call of [
      () => fixed[0].push('g0', { n: -9, pad: PAD }),
      () => fixed[2].pushMany('fresh', [{ n: -9, pad: PAD }]),
      () => timers.schedule({ n: -9, pad: PAD }, { id: 'refused' }),
      () => timers.schedule({ n: -9, pad: PAD }, { id: 't0' }),
      () => timers.reschedule('t0', { delayMs: 60_000 }),
      () => timers.repeat('refused-repeat', { everyMs: 1000 }, { n: -9, pad: PAD }),
    ])
      expect(await refusal(call())).toBeInstanceOf(QueueMemoryError);
    expect(await admin.dbsize()).toBe(keysBefore);
    expect(await fixed[0].size('g0')).toBe(sizeBefore);
    expect(await fixed[2].size('fresh')).toBe(0);
    expect(await timers.get('refused')).toBeNull();
    expect(await timers.get('t0')).toEqual(replaced);
    expect(await timers.get('refused-repeat')).toBeNull();
    // An operator can still hold a group back, and let it go.
    expect(await fixed[0].pauseGroup('g1')).toBe(true);
    expect(await fixed[0].resumeGroup('g1')).toBe(true);

    // Consumers start on the full Redis.
    const started = Date.now();
    await harness.start({
      connection: server.url,
      prefix,
      ...queues,
      providers: [atMostOnce.consumer, atLeastOnce.consumer, unordered.consumer, tasks.consumer],
    });
    const ns = (messages: Message[]) => new Set(messages.map((message) => message.n));
    const timed = () => new Set(tasks.ids().filter((id) => /^t\d+$/.test(id)));
    const drained = () =>
      `${ns(atMostOnce.messages()).size}/${pushed[0]} ordered at-most-once, ` +
      `${ns(atLeastOnce.messages()).size}/${pushed[1] + 2} ordered at-least-once, ` +
      `${ns(unordered.messages()).size}/${pushed[2]} unordered, ` +
      `${timed().size}/${scheduled} tasks (memory ${full} → ${used} bytes)`;
    let used = full;
    await pollUntil(
      async () => {
        used = await usedMemory();
        return (
          ns(atMostOnce.messages()).size === pushed[0] &&
          ns(atLeastOnce.messages()).size === pushed[1] + 2 &&
          ns(unordered.messages()).size === pushed[2] &&
          timed().size === scheduled
        );
      },
      'every message and task to be delivered',
      60_000,
      200,
    ).catch((error: Error) => {
      throw new Error(`${error.message}: ${drained()}`);
    });
    const drainedInMs = Date.now() - started;

    // Acknowledged: nothing is left to deliver, the failing ones went to their dead letters after a retry.
    await pollUntil(
      async () => {
        const [a, b, c] = await Promise.all(fixed.map((queue) => queue.stats()));
        const t = await timers.stats();
        return a.pending + b.pending + c.pending === 0 && a.active + b.active === 0 && t.active <= 1 && t.dead === 1;
      },
      'the queues to be acknowledged',
      20_000,
      100,
    );
    expect((await retried.deadLetters()).map((dead) => dead.group)).toEqual(['poison']);
    expect((await timers.deadLetters()).map((dead) => dead.id)).toEqual(['poison']);
    expect(atLeastOnce.batches.filter((batch) => batch.group === 'flaky').map((batch) => batch.ctx.attempt)).toEqual([
      1, 2,
    ]);
    expect(tasks.tasks.filter((task) => task.id === 'flaky').map((task) => task.ctx.attempt)).toEqual([1, 2]);
    // The recurring task kept running, each occurrence acknowledged and the next one placed.
    await pollUntil(
      () => tasks.ids().filter((id) => id === repeated.id).length >= 3,
      'three occurrences of the repeat',
      20_000,
    );

    // What only frees, or moves a dead task back, goes through too; FixedQueue's requeue, which writes
    // the dead batch back into its group before it deletes it, is refused.
    expect(await timers.unrepeat(repeated.id)).toBe(true);
    expect(await timers.cancel('later')).toBe(true);
    expect(await timers.requeue('poison')).toMatchObject({ id: 'poison' });
    await expect(timers.deleteDead()).resolves.toEqual(expect.any(Number));
    expect(await refusal(retried.requeue((await retried.deadLetters())[0].id))).toBeInstanceOf(QueueMemoryError);
    await fixed[2].obliterate({ force: true });
    expect(await fixed[2].stats()).toMatchObject({ pending: 0, pushed: 0 });

    used = await usedMemory();
    expect(used).toBeLessThan(full - 1024 * 1024);
    process.stdout.write(`maxmemory drain: ${drained()}, delivered in ${drainedInMs} ms\n`);
    // Writes are accepted again once there is room.
    await admin.config('SET', 'maxmemory', '0');
    await expect(fixed[0].push('g0', { n: -10, pad: PAD })).resolves.toEqual({ dropped: 0 });
  }, 150_000);

  it('keeps the leases of long handlers, and takes back what a closing consumer gives back', async () => {
    gate = deferred();
    const queues = {
      fixed: [{ name: 'long-batches', shards: 1, maxWaitMs: 0, delivery: 'at-least-once' as const, leaseMs: 600 }],
      delay: [{ name: 'long-tasks', shards: 1, leaseMs: 600 }],
    };
    const producer = await harness.start({ connection: server.url, ...queues });
    await producer.fixed<Message>('long-batches').push('long', { n: 1, pad: PAD });
    await producer.delay<Message>('long-tasks').schedule({ n: 1, pad: PAD }, { id: 'long' });
    await admin.config('SET', 'maxmemory', '1');
    const consumer = await harness.start({
      connection: server.url,
      prefix: producer.prefix,
      root: { shutdownTimeoutMs: 100 },
      ...queues,
      providers: [longBatches.consumer, longTasks.consumer],
    });
    await longBatches.untilMessages(1);
    await longTasks.untilTasks(1);
    const lease = `${producer.prefix}:{long-batches:0}:leases`;
    const active = `${producer.prefix}:{long-tasks:0}:active`;
    const first = [Number(await admin.zscore(lease, 'long')), Number(await admin.zscore(active, 'long'))];
    // The heartbeat moves both leases on (a third of the lease apart), while the handlers run.
    await pollUntil(
      async () =>
        Number(await admin.zscore(lease, 'long')) > first[0] && Number(await admin.zscore(active, 'long')) > first[1],
      'both leases to be extended',
      5_000,
      50,
    );
    // Closed with the handlers still running: both are given back, due again at once, no attempt spent.
    await harness.close(consumer.app);
    expect(await admin.zscore(lease, 'long')).toBeNull();
    expect(await admin.zscore(active, 'long')).toBeNull();
    expect(await producer.delay('long-tasks').get('long')).toMatchObject({ state: 'scheduled', attempts: 0 });
    expect(await admin.zscore(`${producer.prefix}:{long-batches:0}:ready`, 'long')).not.toBeNull();
    expect([longBatches.batches.length, longTasks.tasks.length]).toEqual([1, 1]);
  });

  it('expires idle groups, and moves on the index entry of a group pushed to since or held', async () => {
    const shard = fixedShardKeys(new QueueKeys(uniquePrefix(), 'idle', 1), 0);
    const now = Number((await admin.time())[0]) * 1000;
    const entry = (at: number) => `[${at},"x"]`;
    const old = now - 3_600_000;
    // Indexed long ago: 'pushed' has a message of now, 'held' a batch out, 'idle' neither.
    await admin.zadd(shard.key('lastPush'), 1, 'pushed', 1, 'held', 1, 'idle');
    await admin.rpush(shard.group('pushed'), entry(old), entry(now));
    await admin.rpush(shard.group('held'), entry(old));
    await admin.hset(shard.key('held'), 'held', 'token:1:1:0');
    await admin.rpush(shard.group('idle'), entry(old), entry(old + 1));
    await admin.config('SET', 'maxmemory', '1');

    const expired = await invoke(new Scripts(admin).add(FIXED_QUEUE_SCRIPTS), fixedExpire, shard, {
      ttlMs: 60_000,
      groups: ['pushed', 'held', 'idle'],
    });
    expect(expired.expired).toEqual([0, 0, 2]);
    expect(Number(await admin.zscore(shard.key('lastPush'), 'pushed'))).toBe(now);
    expect(Number(await admin.zscore(shard.key('lastPush'), 'held'))).toBeGreaterThanOrEqual(now);
    expect(await admin.exists(shard.group('idle'))).toBe(0);
  });
});
