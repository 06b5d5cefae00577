import { Injectable } from '@nestjs/common';
import {
  BatchConsumer,
  type BatchContext,
  type FixedQueueOptions,
  type GroupPausedEvent,
  type GroupResumedEvent,
  QueueClock,
  QueueEvents,
  PartialBatchError,
  QueueInputError,
} from 'nestjs-redis-queues';
import { shardOf } from '../../libs/queue/src/redis/keys';
import { CapturedLogs } from '@test/support/faults';
import { recordBatches, useQueueApps } from '@test/support/fixtures';
import { afterTime, deferred, pollUntil } from '@test/support/testing';

interface Message {
  n: number;
}

const SHARDS = 2;
const batches = recordBatches<Message>('events', { concurrency: 4 });
const seqs = (group: string) =>
  batches.batches.filter((batch) => batch.group === group).flatMap((batch) => batch.messages.map(({ n }) => n));

/** Another group in the shard of `group`: a claim lists the due groups of a shard in due order. */
function besides(group: string, label: string): string {
  for (let i = 0; ; i++) if (shardOf(`${label}${i}`, SHARDS) === shardOf(group, SHARDS)) return `${label}${i}`;
}

const MODES: [string, Partial<FixedQueueOptions>][] = [
  ['ordered at-most-once', {}],
  ['ordered at-least-once', { delivery: 'at-least-once', backoff: { type: 'exponential', delayMs: 0 } }],
  ['unordered', { ordered: false }],
];

describe.each(MODES)('FixedQueue per-group pause (%s)', (_, mode) => {
  const harness = useQueueApps();
  const start = (consumers: boolean, prefix?: string, options: Partial<FixedQueueOptions> = {}) =>
    harness.start({
      prefix,
      // Consumers sleep up to the default idlePollMs (60 s) when nothing is due: only a wake-up brings them sooner.
      root: { consumers, shutdownTimeoutMs: 500 },
      fixed: [{ name: 'events', shards: SHARDS, maxWaitMs: 0, capacity: 5, batchSize: 5, ...mode, ...options }],
      providers: [batches.consumer],
    });

  it('holds one group back from the consumers of every process while it takes pushes; resumeGroup wakes them at once', async () => {
    const producer = await start(false);
    await start(true, producer.prefix);
    await start(true, producer.prefix);
    const queue = producer.fixed<Message>('events');
    const seen: (GroupPausedEvent | GroupResumedEvent)[] = [];
    producer.app.get(QueueEvents).on('group.paused', (event) => seen.push(event));
    producer.app.get(QueueEvents).on('group.resumed', (event) => seen.push(event));

    expect(await queue.pauseGroup('held')).toBe(true);
    expect(await queue.pauseGroup('held')).toBe(false);
    // Capacity applies: 8 pushed into 5 places.
    expect(
      await queue.pushMany(
        'held',
        [1, 2, 3, 4, 5, 6, 7, 8].map((n) => ({ n })),
      ),
    ).toEqual({ dropped: 3 });
    const others = ['a', 'b', 'c', 'd'];
    for (const [i, group] of others.entries()) await queue.push(group, { n: i });
    // Due after 'held' in the same shard: claimed only once 'held' would have been.
    const late = besides('held', 'late');
    await queue.push(late, { n: 100 });
    await batches.untilMessages(5);
    expect(seqs('held')).toEqual([]);

    expect(await queue.pausedGroups()).toEqual({
      items: [{ group: 'held', pausedAt: expect.any(Number), reason: 'manual' }],
      cursor: null,
    });
    const stats = await queue.stats();
    expect(stats).toMatchObject({ pausedGroups: 1, pending: 5, dropped: 3, nextDueAt: null });
    const ready = queue.store.keys.key(shardOf('held', SHARDS), 'ready');
    expect(await harness.redis.zscore(ready, 'held')).toBeNull();

    expect(await queue.resumeGroup('held')).toBe(true);
    expect(await queue.resumeGroup('held')).toBe(false);
    await batches.untilMessages(10);
    expect(seqs('held')).toEqual([4, 5, 6, 7, 8]);
    expect(await queue.pausedGroups()).toEqual({ items: [], cursor: null });
    expect(seen).toEqual([
      { queue: 'events', group: 'held', reason: 'manual' },
      { queue: 'events', group: 'held' },
    ]);
  });

  it('lists every paused group once, page by page', async () => {
    const queue = (await start(false)).fixed<Message>('events');
    const groups = Array.from({ length: 250 }, (_, i) => `g${i}`);
    await Promise.all(groups.map((group) => queue.pauseGroup(group)));
    const listed: string[] = [];
    let cursor: string | undefined;
    do {
      const page = await queue.pausedGroups({ cursor, limit: 100 });
      expect(page.items.length).toBeLessThanOrEqual(100);
      listed.push(...page.items.map(({ group }) => group));
      cursor = page.cursor ?? undefined;
    } while (cursor !== undefined);
    expect(listed.sort()).toEqual([...groups].sort());
    expect((await queue.stats()).pausedGroups).toBe(250);
    await expect(queue.pausedGroups({ limt: 5 } as never)).rejects.toThrow(/pausedGroups\(page\).*limit/);
    await expect(queue.pausedGroups({ cursor: 'nonsense' })).rejects.toThrow(QueueInputError);
    await expect(queue.pauseGroup('')).rejects.toThrow(QueueInputError);
    await expect(queue.resumeGroup('x'.repeat(600))).rejects.toThrow(QueueInputError);
  });
});

describe.each(MODES)('FixedQueue per-group pause and ttlMs (%s)', (_, mode) => {
  const harness = useQueueApps();
  const start = (consumers: boolean, prefix?: string) =>
    harness.start({
      prefix,
      root: { consumers },
      fixed: [{ name: 'events', shards: 1, maxWaitMs: 0, batchSize: 5, ttlMs: 1000, ...mode }],
      providers: [batches.consumer],
    });

  it('keeps a paused group past ttlMs, delivers its backlog after resumeGroup, and counts ttlMs again from the resume', async () => {
    const producer = await start(false);
    const queue = producer.fixed<Message>('events');
    const clock = producer.app.get(QueueClock);
    expect(await queue.pauseGroup('held')).toBe(true);
    await queue.pushMany('held', [{ n: 0 }, { n: 1 }, { n: 2 }]);
    // Still paused when 'held' is resumed: kept past ttlMs through every look below, then consumed.
    expect(await queue.pauseGroup('kept')).toBe(true);
    await queue.pushMany('kept', [{ n: 0 }, { n: 1 }]);
    // One shard: the look that expires the idle group looks at the paused ones too.
    await queue.push('idle', { n: 9 });
    await afterTime(clock, 1000, async () => (await queue.size('idle')) === 0, 'the idle group to expire after ttlMs');
    // On to a little past twice ttlMs since the pause.
    const pausedFor = await afterTime(
      clock,
      1000 + 100,
      async () => {
        const { items } = await queue.pausedGroups();
        const { pausedAt } = items.find(({ group }) => group === 'held')!;
        const now = await clock.now();
        return now - pausedAt > 2 * 1000 ? now - pausedAt : undefined;
      },
      'the pause to last twice ttlMs',
    );
    expect(pausedFor).toBeGreaterThan(2000);
    expect(await queue.size('held')).toBe(3);
    expect(await queue.stats()).toMatchObject({ expired: 1, pending: 5, pausedGroups: 2 });

    expect(await queue.resumeGroup('held')).toBe(true);
    // Nobody consumes here: idle for ttlMs from the resume, it goes as any group does.
    await afterTime(
      clock,
      1000,
      async () => (await queue.size('held')) === 0,
      'the resumed group to expire after ttlMs',
    );
    expect(await queue.stats()).toMatchObject({ expired: 4, pending: 2, pausedGroups: 1 });

    await start(true, producer.prefix);
    expect(await queue.resumeGroup('kept')).toBe(true);
    await pollUntil(() => seqs('kept').length === 2, 'the backlog delivered after the resume');
    expect(seqs('kept')).toEqual([0, 1]);
  });
});

describe.each(MODES.slice(0, 2))('FixedQueue per-group pause of a group being handled (%s)', (_, mode) => {
  const harness = useQueueApps();
  const atLeastOnce = mode.delivery === 'at-least-once';

  it('lets its batch finish, and its acknowledgement (or failure) leaves the group paused until resumeGroup', async () => {
    const { fixed } = await harness.start({
      // batchSize ≤ 16: acknowledgements offer the slot the group's next batch, which a pause must refuse.
      fixed: [{ name: 'events', shards: SHARDS, maxWaitMs: 0, batchSize: 3, ...mode }],
      providers: [batches.consumer],
    });
    const queue = fixed<Message>('events');
    const running = deferred();
    const release = deferred();
    batches.behaviour = async (messages, ctx) => {
      if (ctx.group !== 'g' || ctx.attempt > 1 || messages[0].n !== 0) return;
      running.resolve();
      await release.promise;
      // At least once, the paused group's batch fails: its retry must wait for the resume too.
      if (atLeastOnce) throw new Error('upstream down');
    };
    await queue.pushMany('g', [{ n: 0 }, { n: 1 }, { n: 2 }]);
    await running.promise;
    expect(await queue.pauseGroup('g')).toBe(true);
    await queue.pushMany('g', [{ n: 3 }, { n: 4 }, { n: 5 }]);
    release.resolve();
    await pollUntil(async () => (await queue.stats()).active === 0, 'the batch to finish');
    const late = besides('g', 'late');
    await queue.push(late, { n: 100 });
    await pollUntil(() => seqs(late).length === 1, 'a group due after it to be delivered');
    expect(seqs('g')).toEqual([0, 1, 2]);
    expect(await harness.redis.zscore(queue.store.keys.key(shardOf('g', SHARDS), 'ready'), 'g')).toBeNull();

    expect(await queue.resumeGroup('g')).toBe(true);
    await pollUntil(() => seqs('g').length === (atLeastOnce ? 9 : 6), "the group's batches after the resume");
    expect(seqs('g')).toEqual(atLeastOnce ? [0, 1, 2, 0, 1, 2, 3, 4, 5] : [0, 1, 2, 3, 4, 5]);
    if (atLeastOnce)
      expect(batches.batches.find((batch) => batch.group === 'g' && batch.ctx.attempt === 2)).toBeDefined();
  });
});

describe("FixedQueue onExhausted: 'pause-group'", () => {
  const harness = useQueueApps();
  const queueOptions: Partial<FixedQueueOptions> = {
    name: 'events',
    shards: SHARDS,
    maxWaitMs: 0,
    delivery: 'at-least-once',
    maxAttempts: 2,
    backoff: { type: 'exponential', delayMs: 0 },
    onExhausted: 'pause-group',
  };

  it('holds a batch that failed its last attempt at its group head, pauses the group in every process, and resumeGroup delivers it from attempt 1', async () => {
    const logs = [new CapturedLogs(), new CapturedLogs()];
    const apps = [await harness.start({ fixed: [queueOptions], providers: [batches.consumer], logger: logs[0] })];
    apps.push(
      await harness.start({
        prefix: apps[0].prefix,
        fixed: [queueOptions],
        providers: [batches.consumer],
        logger: logs[1],
      }),
    );
    const queue = apps[0].fixed<Message>('events');
    const paused: GroupPausedEvent[] = [];
    for (const { app } of apps) app.get(QueueEvents).on('group.paused', (event) => paused.push(event));
    let upstreamDown = true;
    batches.behaviour = (_, ctx) => {
      if (ctx.group === 'down' && upstreamDown) throw new Error('upstream down');
    };

    await queue.pushMany('down', [{ n: 0 }, { n: 1 }, { n: 2 }]);
    await queue.push('up', { n: 0 });
    await pollUntil(() => paused.length === 1, 'the group to be paused');
    expect(paused).toEqual([{ queue: 'events', group: 'down', reason: 'exhausted' }]);
    const attempts = () => batches.batches.filter((batch) => batch.group === 'down').map((batch) => batch.ctx.attempt);
    expect(attempts()).toEqual([1, 2]);
    expect(await queue.pausedGroups()).toEqual({
      items: [{ group: 'down', pausedAt: expect.any(Number), reason: 'exhausted' }],
      cursor: null,
    });
    expect(await queue.deadLetters()).toEqual([]);
    const warned = logs.flatMap((captured) => captured.find('warn', /its group is paused with it at its head/));
    expect(warned).toEqual([expect.stringMatching(/group="down".*attempt=2.*upstream down/)]);

    // Held: newer messages wait behind it, while a group due after it in its shard is delivered.
    await queue.push('down', { n: 3 });
    const late = besides('down', 'late');
    await queue.push(late, { n: 100 });
    await pollUntil(() => seqs(late).length === 1, 'a group due after it to be delivered');
    expect(attempts()).toEqual([1, 2]);
    // The late batch's acknowledgement follows its handler: its message leaves `pending` a moment later.
    const held = await pollUntil(async () => {
      const stats = await queue.stats();
      return stats.pending === 4 ? stats : undefined;
    }, 'the late batch to be acknowledged');
    expect(held).toMatchObject({ pausedGroups: 1, dead: 0, deadTotal: 0, pending: 4 });

    upstreamDown = false;
    expect(await apps[1].fixed<Message>('events').resumeGroup('down')).toBe(true);
    await pollUntil(() => seqs('down').length === 10, "the group's batches after the resume");
    expect(attempts()).toEqual([1, 2, 1, 1]);
    expect(seqs('down')).toEqual([0, 1, 2, 0, 1, 2, 0, 1, 2, 3]);
    expect(paused).toHaveLength(1);
  });

  it('pauses the group when the lease of its last attempt runs out (the consumer died)', async () => {
    const { app, fixed } = await harness.start({
      root: { consumers: false },
      fixed: [{ ...queueOptions, maxAttempts: 1, leaseMs: 100 }],
    });
    const queue = fixed<Message>('events');
    const shard = shardOf('g', SHARDS);
    await queue.pushMany('g', [{ n: 0 }, { n: 1 }]);
    // Claimed by a consumer that never acknowledges nor extends it.
    let due = (await queue.store.take(shard, 10, [])).due;
    const first = await queue.store.take(shard, 10, due);
    expect(first.batches.map(({ group, attempt }) => [group, attempt])).toEqual([['g', 1]]);
    await afterTime(
      app.get(QueueClock),
      100 + 50,
      async () => {
        due = (await queue.store.take(shard, 10, due)).due;
        return (await queue.pausedGroups()).items.length === 1;
      },
      'the lapsed last attempt to pause the group',
    );
    expect((await queue.pausedGroups()).items).toEqual([
      { group: 'g', pausedAt: expect.any(Number), reason: 'exhausted' },
    ]);
    expect(await queue.deadLetters()).toEqual([]);

    expect(await queue.resumeGroup('g')).toBe(true);
    const again = await pollUntil(async () => {
      const taken = await queue.store.take(shard, 10, due);
      due = taken.due;
      return taken.batches.length > 0 ? taken.batches : undefined;
    }, 'the batch delivered again');
    expect(again).toEqual([expect.objectContaining({ group: 'g', attempt: 1, messages: [{ n: 0 }, { n: 1 }] })]);
  });

  it('announces a pause for a lapsed last attempt in the process whose claim makes it: a warning and group.paused', async () => {
    const options = { ...queueOptions, maxAttempts: 1, leaseMs: 200 };
    const dead = await harness.start({ root: { consumers: false }, fixed: [options] });
    const queue = dead.fixed<Message>('events');
    const shard = shardOf('g', SHARDS);
    await queue.pushMany('g', [{ n: 0 }, { n: 1 }]);
    // Claimed by a consumer that never acknowledges nor extends it, before any other consumer runs.
    const due = (await queue.store.take(shard, 10, [])).due;
    expect((await queue.store.take(shard, 10, due)).batches).toHaveLength(1);

    const logs = new CapturedLogs();
    const noticing = await harness.start({
      prefix: dead.prefix,
      fixed: [options],
      providers: [batches.consumer],
      logger: logs,
    });
    const paused: GroupPausedEvent[] = [];
    noticing.app.get(QueueEvents).on('group.paused', (event) => paused.push(event));
    await afterTime(
      noticing.app.get(QueueClock),
      200 + 50,
      () => paused.length === 1,
      'group.paused for the lapsed last attempt',
    );
    expect(paused).toEqual([{ queue: 'events', group: 'g', reason: 'exhausted' }]);
    expect(logs.find('warn', /did not settle before its lease ran out; its group is paused/)).toEqual([
      expect.stringContaining('group="g"'),
    ]);
    expect((await queue.pausedGroups()).items).toEqual([
      { group: 'g', pausedAt: expect.any(Number), reason: 'exhausted' },
    ]);
    expect(seqs('g')).toEqual([]);
  });

  it('is refused beside at-most-once delivery, and takes only its two values', async () => {
    await expect(harness.start({ fixed: [{ name: 'events', onExhausted: 'pause-group' }] })).rejects.toThrow(
      /onExhausted 'pause-group' needs delivery 'at-least-once'.*got delivery=at-most-once by default/,
    );
    await expect(harness.start({ fixed: [{ ...queueOptions, onExhausted: 'pause' as never }] })).rejects.toThrow(
      /onExhausted must be one of the following values: dead-letter, pause-group/,
    );
  });
});

/** A consumer whose handler answers as `answer` says, and which records what `onFailed` gets. */
@Injectable()
class PartialReporter {
  static answer: (messages: Message[], ctx: BatchContext) => void = () => undefined;
  static seen: { messages: number[]; attempt: number }[] = [];
  static failed: { messages: number[]; error: unknown }[] = [];

  @BatchConsumer('events', { onFailed: 'failed' })
  report(messages: Message[], ctx: BatchContext) {
    PartialReporter.seen.push({ messages: messages.map(({ n }) => n), attempt: ctx.attempt });
    PartialReporter.answer(messages, ctx);
  }

  failed(error: unknown, messages: Message[]) {
    PartialReporter.failed.push({ messages: messages.map(({ n }) => n), error });
  }
}

describe('PartialBatchError', () => {
  const harness = useQueueApps();
  beforeEach(() => {
    PartialReporter.answer = () => undefined;
    PartialReporter.seen = [];
    PartialReporter.failed = [];
  });
  const start = (options: Partial<FixedQueueOptions>, logger = new CapturedLogs()) =>
    harness.start({
      fixed: [
        {
          name: 'events',
          shards: 1,
          maxWaitMs: 0,
          backoff: { type: 'exponential', delayMs: 0 },
          maxAttempts: 3,
          ...options,
        },
      ],
      providers: [PartialReporter],
      logger,
    });
  const five = [0, 1, 2, 3, 4].map((n) => ({ n }));

  it('acknowledges the first n messages at least once; the rest come back first, in order, as the next attempt', async () => {
    const logs = new CapturedLogs();
    const queue = (await start({ delivery: 'at-least-once' }, logs)).fixed<Message>('events');
    PartialReporter.answer = (messages, ctx) => {
      if (ctx.attempt === 1) throw new PartialBatchError(2, new Error('the upstream took 2'));
    };
    await queue.pushMany('g', five);
    await pollUntil(async () => (await queue.stats()).delivered === 5, 'every message acknowledged');
    expect(PartialReporter.seen).toEqual([
      { messages: [0, 1, 2, 3, 4], attempt: 1 },
      { messages: [2, 3, 4], attempt: 2 },
    ]);
    expect(await queue.stats()).toMatchObject({ pending: 0, redelivered: 3, dead: 0 });
    expect(logs.find('warn', /will be delivered again/)).toEqual([
      expect.stringMatching(
        /acknowledged=2 .*the first 2 messages of the batch were handled, not the rest: the upstream took 2/,
      ),
    ]);
  });

  it('dead-letters only what is left after the last attempt, and hands onFailed just that', async () => {
    const queue = (await start({ delivery: 'at-least-once', maxAttempts: 2 })).fixed<Message>('events');
    PartialReporter.answer = () => {
      throw new PartialBatchError(1);
    };
    await queue.pushMany('g', five);
    await pollUntil(() => PartialReporter.failed.length === 1, 'the rest dead-lettered');
    expect(PartialReporter.seen.map(({ messages }) => messages)).toEqual([
      [0, 1, 2, 3, 4],
      [1, 2, 3, 4],
    ]);
    expect(PartialReporter.failed[0].messages).toEqual([2, 3, 4]);
    expect((await queue.deadLetters()).map(({ messages, attempts }) => [messages, attempts])).toEqual([
      [[{ n: 2 }, { n: 3 }, { n: 4 }], 2],
    ]);
    expect(await queue.stats()).toMatchObject({ delivered: 2, dead: 3, pending: 0 });
  });

  it('logs an error for a count that names no part of the batch, and fails the whole batch', async () => {
    const logs = new CapturedLogs();
    const queue = (await start({ delivery: 'at-least-once', maxAttempts: 4 }, logs)).fixed<Message>('events');
    const counts = [6, 7, 99];
    PartialReporter.answer = (_, ctx) => {
      if (ctx.attempt <= counts.length) throw new PartialBatchError(counts[ctx.attempt - 1]);
    };
    await queue.pushMany('g', five);
    await pollUntil(async () => (await queue.stats()).delivered === 5, 'the batch acknowledged at last');
    expect(PartialReporter.seen.map(({ messages }) => messages.length)).toEqual([5, 5, 5, 5]);
    expect(logs.find('error', /names no part of a batch/)).toEqual(
      counts.map((count) =>
        expect.stringContaining(
          `PartialBatchError(${count}) names no part of a batch of 5 messages (0 to 5): no message is acknowledged, the whole batch fails`,
        ),
      ),
    );
  });

  it('acknowledges a batch whose every message was handled', async () => {
    const queue = (await start({ delivery: 'at-least-once' })).fixed<Message>('events');
    PartialReporter.answer = (messages) => {
      throw new PartialBatchError(messages.length);
    };
    await queue.pushMany('g', five);
    await pollUntil(async () => (await queue.stats()).delivered === 5, 'the batch acknowledged');
    expect(PartialReporter.seen).toHaveLength(1);
    expect(await queue.stats()).toMatchObject({ redelivered: 0, pending: 0 });
  });

  it('fails the whole batch at most once, as any error does', async () => {
    const queue = (await start({ delivery: 'at-most-once' })).fixed<Message>('events');
    PartialReporter.answer = () => {
      throw new PartialBatchError(2);
    };
    await queue.pushMany('g', five);
    await pollUntil(() => PartialReporter.failed.length === 1, 'onFailed');
    expect(PartialReporter.failed[0].messages).toEqual([0, 1, 2, 3, 4]);
    expect(PartialReporter.failed[0].error).toBeInstanceOf(PartialBatchError);
    expect(PartialReporter.seen).toHaveLength(1);
  });
});

describe.each(MODES)('FixedQueue groupRateLimit (%s)', (_, mode) => {
  const harness = useQueueApps();
  const start = (consumers: boolean, prefix: string | undefined, groupRateLimit: FixedQueueOptions['groupRateLimit']) =>
    harness.start({
      prefix,
      root: { consumers, idlePollMs: 200 },
      fixed: [{ name: 'events', shards: SHARDS, maxWaitMs: 0, batchSize: 3, ...mode, groupRateLimit }],
      providers: [batches.consumer],
    });
  const hot = () => batches.batches.filter((batch) => batch.group === 'hot');

  it('starts at most max batches of a group per window across every process, its ready entry at the window end, other groups going on', async () => {
    const rate = { max: 2, durationMs: 60_000 };
    const producer = await start(false, undefined, rate);
    await start(true, producer.prefix, rate);
    await start(true, producer.prefix, rate);
    const queue = producer.fixed<Message>('events');
    await queue.pushMany('hot', [{ n: 0 }, { n: 1 }, { n: 2 }]);
    await pollUntil(() => hot().length === 1, 'the first batch');
    await queue.pushMany('hot', [{ n: 3 }, { n: 4 }, { n: 5 }]);
    await pollUntil(() => hot().length === 2, 'the second batch');
    await pollUntil(async () => (await queue.stats()).active === 0, 'both acknowledged');

    await queue.pushMany('hot', [{ n: 6 }, { n: 7 }, { n: 8 }]);
    const late = besides('hot', 'late');
    await queue.push(late, { n: 100 });
    await pollUntil(() => seqs(late).length === 1, 'a group due after it to be delivered');
    const ready = queue.store.keys.key(shardOf('hot', SHARDS), 'ready');
    const windowEnd = hot()[0].ctx.claimedAt + rate.durationMs;
    await pollUntil(
      async () => Number(await harness.redis.zscore(ready, 'hot')) === windowEnd,
      "the group's ready entry at its window's end",
    );
    expect(hot().map((batch) => batch.messages.length)).toEqual([3, 3]);
    expect(seqs('hot')).toEqual([0, 1, 2, 3, 4, 5]);
    expect((await queue.stats()).pending).toBe(3);
  });

  it('lets the group grow into a bigger batch while it waits for its window', async () => {
    const rate = { max: 1, durationMs: 1000 };
    const first = await start(true, undefined, rate);
    await start(true, first.prefix, rate);
    const queue = first.fixed<Message>('events');
    await queue.push('hot', { n: 0 });
    await pollUntil(() => hot().length === 1, 'the first batch');
    for (const n of [1, 2, 3]) await queue.push('hot', { n });
    await afterTime(first.app.get(QueueClock), rate.durationMs, () => hot().length === 2, 'the second batch', 15_000);
    const [one, two] = hot();
    expect(two.messages).toEqual([{ n: 1 }, { n: 2 }, { n: 3 }]);
    expect(two.ctx.claimedAt - one.ctx.claimedAt).toBeGreaterThanOrEqual(rate.durationMs);
  });
});

describe('FixedQueue groupRateLimit options', () => {
  const harness = useQueueApps();

  it('are checked like the other options', async () => {
    const start = (groupRateLimit: unknown) =>
      harness.start({
        fixed: [{ name: 'events', groupRateLimit: groupRateLimit as FixedQueueOptions['groupRateLimit'] }],
      });
    await expect(start({ max: 0, durationMs: 1000 })).rejects.toThrow(
      'groupRateLimit.max must be an integer between 1 and 1000 (got 0)',
    );
    await expect(start({ max: 2, durationMs: 1.5 })).rejects.toThrow(/groupRateLimit\.durationMs must be an integer/);
    await expect(start({ max: 2, duration: 1000 })).rejects.toThrow(/groupRateLimit\.duration.*durationMs/);
  });
});
