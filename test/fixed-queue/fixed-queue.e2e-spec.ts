import { IsInt, IsString, Min } from 'class-validator';
import {
  type FixedQueueOptions,
  type QueueConnection,
  QueueClock,
  QueueEvents,
  QueueInputError,
  QueueSchemaError,
} from 'nestjs-redis-queues';
import { passTime } from 'nestjs-redis-queues/testing';
import { shardOf } from '../../libs/queue/src/redis/keys';
import { FixedQueueStore } from '../../libs/queue/src/fixed-queue/fixed-queue.store';
import { recordBatches, useQueueApps } from '@test/support/fixtures';
import { afterTime, flushScripts, keysMatching, onMemory, pollUntil, uniquePrefix } from '@test/support/testing';

class GameEvent {
  @IsString()
  type!: string;

  @IsInt()
  @Min(0)
  seq!: number;
}

const collector = recordBatches<GameEvent>('events', { concurrency: 4 });
const rawCollector = recordBatches<string>('events', { raw: true });

describe('FixedQueue (real redis-server)', () => {
  const harness = useQueueApps();

  async function start(
    prefix: string,
    queue: Partial<FixedQueueOptions>,
    providers = [collector.consumer],
    connection?: QueueConnection,
  ) {
    const { app, fixed } = await harness.start({
      prefix,
      connection,
      root: { idlePollMs: 200 },
      fixed: [{ name: 'events', shards: 4, ...queue }],
      providers,
    });
    return { app, queue: fixed<GameEvent>('events'), clock: app.get(QueueClock) };
  }

  const events = (n: number, from = 0) => Array.from({ length: n }, (_, i) => ({ type: 'click', seq: from + i }));
  const delivered = () => collector.batches.flatMap((r) => r.messages.map((m) => `${r.group}/${m.seq}`));

  it('delivers exact batches of one group, in push order', async () => {
    const { queue, clock } = await start(uniquePrefix(), { batchSize: 10, capacity: 100, maxWaitMs: 50 });
    await Promise.all(events(25).map((e) => queue.push('game-a', e)));
    // The last 5 after maxWaitMs.
    await afterTime(clock, 50, () => delivered().length >= 25, '25 messages');
    const sizes = collector.batches.map((r) => r.messages.length);
    expect(sizes.slice(0, 2)).toEqual([10, 10]);
    expect(sizes.reduce((a, b) => a + b, 0)).toBe(25);
    expect(sizes.every((s) => s <= 10)).toBe(true);
    expect(collector.batches.map((r) => r.messages.map((m) => m.seq)).flat()).toEqual(events(25).map((e) => e.seq));
    expect(collector.batches.every((r) => r.group === 'game-a' && r.ctx.queue === 'events')).toBe(true);
  });

  it('stores a push given an idempotencyKey once, from any app, in push order among the others', async () => {
    const prefix = uniquePrefix();
    const { queue: a, clock } = await start(prefix, { batchSize: 100, maxWaitMs: 300 });
    const { queue: b } = await start(prefix, { batchSize: 100, maxWaitMs: 300 }, []);
    const [e0, e1, e2, e3, e4] = events(5);
    // One turn: a keyed push between others of its group keeps its place in the list.
    const firsts = await Promise.all([
      a.push('g', e0),
      a.push('g', e1, { idempotencyKey: 'k1' }),
      a.push('g', e2),
      a.pushMany('g', [e3, e4], { idempotencyKey: 'k2' }),
    ]);
    expect(firsts).toEqual([{ dropped: 0 }, { dropped: 0 }, { dropped: 0 }, { dropped: 0 }]);
    expect(await b.push('g', e1, { idempotencyKey: 'k1' })).toEqual({ dropped: 0 });
    expect(await b.pushMany('g', [e3, e4], { idempotencyKey: 'k2', retryMs: 1000 })).toEqual({ dropped: 0 });
    // The same key for another group is another call.
    await b.push('h', e1, { idempotencyKey: 'k1' });
    await afterTime(clock, 300, () => delivered().length >= 6, '6 messages');
    expect(delivered().sort()).toEqual(['g/0', 'g/1', 'g/2', 'g/3', 'g/4', 'h/1']);
    expect(collector.batches.find((batch) => batch.group === 'g')!.messages.map((m) => m.seq)).toEqual([0, 1, 2, 3, 4]);
    expect(await a.stats()).toMatchObject({ pushed: 6 });
  });

  it('reloads its scripts transparently after SCRIPT FLUSH', async () => {
    const { queue } = await start(uniquePrefix(), { batchSize: 5, maxWaitMs: 20 });
    await queue.pushMany('g', events(5));
    await collector.untilMessages(5);
    await flushScripts(harness.redis);
    await queue.pushMany('g', events(5, 5));
    await collector.untilMessages(10);
    expect(delivered()).toEqual(events(10).map((e) => `g/${e.seq}`));
  });

  it('hands raw consumers the JSON text of each message, as pushed', async () => {
    const prefix = uniquePrefix();
    const { queue } = await start(prefix, { batchSize: 3, maxWaitMs: 20 }, []);
    const messages = [
      { type: 'a,b]', seq: 1 },
      { type: '{"x":[1,2]}', seq: 2 },
      { type: 'é\n', seq: 3 },
    ];
    await queue.pushMany('g', messages);
    await start(prefix, { batchSize: 3, maxWaitMs: 20 }, [rawCollector.consumer]);
    const batch = await pollUntil(() => rawCollector.batches[0]?.messages, 'the raw batch');
    expect(batch).toEqual(messages.map((m) => JSON.stringify(m)));
    expect(JSON.parse(`[${batch.join(',')}]`)).toEqual(messages);
  });

  it('delivers text with newlines, braces, colons and unicode exactly', async () => {
    const { queue } = await start(uniquePrefix(), { batchSize: 3, capacity: 10, maxWaitMs: 10 });
    const tricky = ['line 1\nline 2\r\n', '{a}:{b} [c] ,]', 'ünïcødé ☃ \u0000 end'];
    const group = 'gr{o}up: with spaces ☃';
    await Promise.all(tricky.map((type, seq) => queue.push(group, { type, seq })));
    await collector.untilMessages(3);
    expect(collector.batches[0].group).toBe(group);
    expect(collector.batches[0].messages).toEqual(tricky.map((type, seq) => ({ type, seq })));
  });

  it('evicts the oldest beyond capacity and counts what was dropped', async () => {
    const prefix = uniquePrefix();
    const { queue } = await start(prefix, { batchSize: 5, capacity: 10, maxWaitMs: 60_000 }, []);
    const first = await queue.pushMany('g', events(8));
    const second = await queue.pushMany('g', events(5, 8));
    expect(first).toEqual({ dropped: 0 });
    expect(second).toEqual({ dropped: 3 });
    expect(await queue.size('g')).toBe(10);
    const stats = await queue.stats();
    expect(stats).toMatchObject({ groups: 1, pending: 10, pushed: 13, dropped: 3, delivered: 0 });
  });

  it('keeps drop-oldest exact under concurrent pushes from several clients', async () => {
    const prefix = uniquePrefix();
    const capacity = 50;
    const producers = await Promise.all(
      [0, 1, 2].map(() => start(prefix, { batchSize: 10, capacity, maxWaitMs: 60_000 }, [])),
    );
    const results = await Promise.all(
      producers.flatMap(({ queue }, p) => events(200, p * 1000).map((e) => queue.push('hot', e))),
    );
    const dropped = results.reduce((sum, r) => sum + r.dropped, 0);
    expect(dropped).toBe(600 - capacity);
    expect(await producers[0].queue.size('hot')).toBe(capacity);

    // Consume what is left: nothing delivered was counted dropped, nothing is missing that was not dropped.
    const { queue } = await start(prefix, { batchSize: 10, capacity, maxWaitMs: 60_000 });
    await collector.untilMessages(capacity);
    expect(new Set(delivered()).size).toBe(capacity);
    // Ordered: the group is held until the last batch's acknowledgement lands, just after its handler.
    const stats = await pollUntil(async () => {
      const now = await queue.stats();
      return now.active === 0 && now;
    }, 'the last batch acknowledged');
    expect(stats).toMatchObject({ pushed: 600, dropped: 600 - capacity, delivered: capacity, pending: 0, groups: 0 });
  });

  it('flushes a partial batch after maxWaitMs, and a full group at once', async () => {
    const { queue, clock } = await start(uniquePrefix(), { batchSize: 10, capacity: 100, maxWaitMs: 700 });
    const t0 = await clock.now();
    await queue.pushMany('cold', events(3));
    await queue.pushMany('hot', events(10));
    await pollUntil(() => collector.batches.find((r) => r.group === 'hot'), 'the hot group');
    const hotAfter = (await clock.now()) - t0;
    expect(collector.batches.some((r) => r.group === 'cold')).toBe(false);
    await afterTime(clock, 700, () => collector.batches.find((r) => r.group === 'cold'), 'the cold group');
    const coldAfter = (await clock.now()) - t0;
    expect(hotAfter).toBeLessThan(500);
    expect(coldAfter).toBeGreaterThanOrEqual(650);
    expect(collector.batches.find((r) => r.group === 'cold')!.messages).toHaveLength(3);
  });

  it('discards messages older than maxAgeMs and reports them as expired', async () => {
    const prefix = uniquePrefix();
    const { queue, clock } = await start(
      prefix,
      { batchSize: 10, capacity: 100, maxWaitMs: 60_000, maxAgeMs: 300 },
      [],
    );
    await queue.pushMany('g', events(4));
    await passTime(clock, 400); // age the first messages past maxAgeMs
    // The consumer first: however long it takes to start, the fresh messages are pushed after it.
    await start(prefix, { batchSize: 10, capacity: 100, maxWaitMs: 60_000, maxAgeMs: 300 });
    await queue.pushMany('g', events(6, 4));
    const batch = await pollUntil(() => collector.batches[0], 'the full group');
    expect(batch.messages.map((m) => m.seq)).toEqual([4, 5, 6, 7, 8, 9]);
    expect(batch.ctx.expired).toBe(4);
    expect(await queue.stats()).toMatchObject({ expired: 4, delivered: 6, pending: 0 });
  });

  it('lets an idle group expire after ttlMs and keeps the counters right', async () => {
    const prefix = uniquePrefix();
    const { queue, app, clock } = await start(
      prefix,
      { batchSize: 10, capacity: 100, maxWaitMs: 500, ttlMs: 1000 },
      [],
    );
    const expired: { group: string; count: number }[] = [];
    app.get(QueueEvents).on('messages.expired', ({ group, count }) => expired.push({ group, count }));
    await queue.pushMany('idle', events(3));
    const pushedAt = await clock.now();
    // Between ttlMs and ttlMs plus one round over the shards (here ttlMs itself) after the last push.
    await afterTime(clock, 2 * 1000, async () => (await queue.size('idle')) === 0, 'the idle group to expire', 5000);
    expect((await clock.now()) - pushedAt).toBeGreaterThanOrEqual(1000);
    expect(expired).toEqual([{ group: 'idle', count: 3 }]);
    await queue.pushMany('idle', events(2));
    expect(await queue.stats()).toMatchObject({ pending: 2, expired: 3, groups: 1 });
  });

  it('looks for idle groups in a shard no sooner than its oldest group could be idle: an empty queue, once per ttlMs', async () => {
    // 64 shards and ttlMs well over a minute: a look at one shard every 60 s / 64, about 940 ms, if it looked every round.
    const looks = jest.spyOn(FixedQueueStore.prototype, 'idleGroups');
    try {
      const { clock } = await start(uniquePrefix(), { shards: 64, ttlMs: 600_000 }, []);
      await pollUntil(() => looks.mock.calls.length >= 64, 'the first look at every shard');
      // Two such looks, were it looking every round.
      await passTime(clock, 2000);
      expect(looks).toHaveBeenCalledTimes(64);
    } finally {
      looks.mockRestore();
    }
  });

  it('keeps past ttlMs a group still pushed to, and an at-least-once group whose batch is out', async () => {
    const prefix = uniquePrefix();
    const slow = recordBatches<GameEvent>('events', { concurrency: 1 });
    let finish!: () => void;
    const finished = new Promise<void>((resolve) => (finish = resolve));
    slow.behaviour = () => finished;
    const options = { batchSize: 2, capacity: 100, maxWaitMs: 0, ttlMs: 1000, delivery: 'at-least-once' as const };
    // The batch out is a handler still running, and the still clock of memory:// never moves while one
    // runs: there this test takes an instance of its own that follows the wall clock.
    const connection = onMemory ? 'memory://fixed-queue-held?clock=system' : undefined;
    const { queue } = await start(prefix, options, [slow.consumer], connection);
    await queue.pushMany('held', events(2));
    await pollUntil(() => slow.batches.length === 1, 'the batch to be out');
    // Three times ttlMs, each push to 'live' within ttlMs of the previous one; only the first created its index entry.
    const startedAt = Date.now();
    let seq = 0;
    while (Date.now() - startedAt < 3000) {
      await queue.push('live', events(1, seq++)[0]);
      await new Promise((resolve) => setTimeout(resolve, 100));
    }
    expect((await queue.stats()).expired).toBe(0);
    expect(await queue.size('held')).toBe(2);
    finish();
    await pollUntil(async () => (await queue.size('held')) === 0, 'the batch to be acknowledged');
    expect((await queue.stats()).expired).toBe(0);
  });

  it('never hands the same message to two consumer apps', async () => {
    const prefix = uniquePrefix();
    const options = { batchSize: 16, capacity: 1000, maxWaitMs: 20 };
    const { queue, clock } = await start(prefix, options);
    await start(prefix, options);
    const groups = Array.from({ length: 50 }, (_, g) => `game-${g}`);
    await Promise.all(groups.flatMap((g) => events(40).map((e) => queue.push(g, e))));
    // Each group's last 8 after maxWaitMs.
    await afterTime(clock, 20, () => delivered().length >= 2000, '2000 messages');
    expect(delivered()).toHaveLength(2000);
    expect(new Set(delivered()).size).toBe(2000);
    for (const r of collector.batches) expect(r.messages.length).toBeLessThanOrEqual(16);
  });

  it('lists the hottest groups (heads of the ready index) with their sizes, largest first', async () => {
    const { queue } = await start(uniquePrefix(), { batchSize: 5, capacity: 50, maxWaitMs: 60_000 }, []);
    await queue.pushMany('big', events(12));
    await queue.pushMany('full', events(5));
    await queue.pushMany('small', events(2));
    const hottest = await queue.hottestGroups(2);
    expect(hottest.map(({ group, size }) => ({ group, size }))).toEqual([
      { group: 'big', size: 12 },
      { group: 'full', size: 5 },
    ]);
    const serverNow = Number((await harness.redis.time())[0]) * 1000;
    // Full groups are due now; a partial one when its oldest message has waited maxWaitMs.
    expect(hottest[0].dueAt).toBeLessThanOrEqual(serverNow + 1000);
    expect((await queue.hottestGroups()).find((g) => g.group === 'small')?.dueAt).toBeGreaterThan(serverNow + 50_000);
    for (const bad of [0, 1.5, 1001, Number.NaN, '3'])
      await expect(queue.hottestGroups(bad as number)).rejects.toThrow(QueueInputError);
  });

  it('rejects bad input with typed errors and writes nothing', async () => {
    const prefix = uniquePrefix();
    const { queue } = await start(prefix, { schema: GameEvent, maxPayloadBytes: 200 }, []);
    const cyclic: Record<string, unknown> = { type: 'x', seq: 1 };
    cyclic.self = cyclic;
    await expect(queue.push('', { type: 'x', seq: 1 })).rejects.toThrow(QueueInputError);
    await expect(queue.push('x'.repeat(513), { type: 'x', seq: 1 })).rejects.toThrow(/513 bytes; the limit is 512/);
    await expect(queue.push('g', { type: 'x', seq: -1 })).rejects.toThrow(QueueSchemaError);
    await expect(queue.push('g', { type: 'x', seq: 1n } as never)).rejects.toThrow(QueueInputError);
    await expect(queue.push('g', cyclic as never)).rejects.toThrow(/not JSON-serialisable/);
    // JSON would turn these into {} or null silently: refused like the values it cannot write at all.
    await expect(queue.push('g', { type: 'x', seq: NaN })).rejects.toThrow(
      /not JSON-serialisable: NaN at key "seq" would arrive as null/,
    );
    await expect(queue.push('g', { type: 'x', seq: 1, tags: new Set(['a']) } as never)).rejects.toThrow(
      /a Set at key "tags" would arrive as \{\}; send \[\.\.\.set\]/,
    );
    await expect(queue.pushMany('g', [{ type: 'x', seq: 1 }, new Map() as never])).rejects.toThrow(
      /not JSON-serialisable: a Map would arrive as \{\}/,
    );
    await expect(queue.push('g', { type: 'x', seq: Infinity })).rejects.toThrow(/Infinity at key "seq"/);
    await expect(queue.push('g', { type: 'x'.repeat(300), seq: 1 })).rejects.toThrow(
      /limit \(maxPayloadBytes\) is 200/,
    );
    await expect(
      queue.pushMany('g', [
        { type: 'ok', seq: 1 },
        { type: 'bad', seq: 1.5 },
      ]),
    ).rejects.toThrow(QueueSchemaError);
    const violations = await queue
      .push('g', { type: 7, seq: 'x' } as never)
      .catch((error: QueueSchemaError) => error.violations);
    expect(violations).toEqual(expect.arrayContaining([expect.stringMatching(/^type/), expect.stringMatching(/^seq/)]));
    // The queue's record, and the process' announcement (QueueProcesses): nothing of the pushes.
    expect(await keysMatching(harness.redis, `${prefix}:*`)).toEqual([
      `${prefix}:{events}:meta`,
      `${prefix}:{processes}:announced`,
    ]);
  });

  it('fails start-up on invalid options, naming the rule', async () => {
    await expect(start(uniquePrefix(), { capacity: 10, batchSize: 128 })).rejects.toThrow(
      /capacity must be ≥ batchSize/,
    );
    await expect(start(uniquePrefix(), { shards: 0 })).rejects.toThrow(
      /shards must be an integer between 1 and 16384 \(got 0\)/,
    );
    await expect(start(uniquePrefix(), { name: 'bad name' } as never)).rejects.toThrow(/name must be 1-100 characters/);
  });

  it('refuses a shard count different from the one stored', async () => {
    const prefix = uniquePrefix();
    await start(prefix, { shards: 4 }, []);
    await expect(start(prefix, { shards: 8 }, [])).rejects.toThrow(/created with 4 shards but is configured with 8/);
  });

  it('takes over a queue stored in layout 1 (0.1), and marks it so that 0.1 processes refuse it', async () => {
    const prefix = uniquePrefix();
    // As 0.1.0 left it: no layout recorded.
    await harness.redis.hset(`${prefix}:{events}:meta`, 'kind', 'fixed', 'shards', '4');
    // 0.1's lists carry a TTL and a lens hash counts them; one list (gone) expired by its TTL meanwhile.
    const tag = (group: string) => `${prefix}:{events:${shardOf(group, 4)}}`;
    const entry = (seq: number) => `[${Date.now()},${JSON.stringify(events(1, seq)[0])}]`;
    await harness.redis.rpush(`${tag('kept')}:g:kept`, entry(0), entry(1));
    await harness.redis.pexpire(`${tag('kept')}:g:kept`, 60_000);
    await harness.redis.hset(`${tag('kept')}:lens`, 'kept', 2);
    await harness.redis.hset(`${tag('gone')}:lens`, 'gone', 3);
    for (const group of ['kept', 'gone'])
      await harness.redis.hincrby(`${tag(group)}:stats`, 'pending', group === 'kept' ? 2 : 3);
    const { queue } = await start(prefix, { shards: 4 }, []);
    expect(await harness.redis.hget(`${prefix}:{events}:meta`, 'layout')).toBe('2');
    expect(await harness.redis.pttl(`${tag('kept')}:g:kept`)).toBe(-1);
    expect(await harness.redis.zrange(`${tag('kept')}:lastPush`, 0, -1)).toEqual(['kept']);
    for (const group of ['kept', 'gone']) expect(await harness.redis.exists(`${tag(group)}:lens`)).toBe(0);
    expect(await queue.stats()).toMatchObject({ pending: 2, expired: 3 });
    await queue.push('g', events(1)[0]);
    expect(await queue.size('g')).toBe(1);
    expect(await queue.size('kept')).toBe(2);
  });

  it('loses no claimed batch when the app closes under load', async () => {
    const prefix = uniquePrefix();
    const slow = recordBatches<GameEvent>('events', { concurrency: 2 });
    slow.behaviour = () => new Promise((resolve) => setTimeout(resolve, 30));
    const seen = () => slow.batches.flatMap((b) => b.messages.map((m) => `${b.group}/${m.seq}`));
    const options = { name: 'events', shards: 4, batchSize: 10, capacity: 1000, maxWaitMs: 10 };
    const make = (consume: boolean) => start(prefix, options, consume ? [slow.consumer] : []);
    const { queue } = await make(false);
    await Promise.all(Array.from({ length: 20 }, (_, g) => queue.pushMany(`g${g}`, events(30))));
    const consumer = await make(true);
    await pollUntil(() => seen().length > 50, 'some batches handled');
    await harness.close(consumer.app);
    const stats = await queue.stats();
    // Everything claimed was handled before close() returned; the rest is still in Redis.
    expect(seen().length).toBe(stats.delivered);
    expect(stats.delivered + stats.pending).toBe(600);
    await make(true);
    await slow.untilMessages(600);
    expect(seen()).toHaveLength(600);
    expect(new Set(seen()).size).toBe(600);
  });
});
