import { Injectable } from '@nestjs/common';
import {
  BatchConsumer,
  type BatchContext,
  DelayConsumer,
  type DelayContext,
  type FixedQueueOptions,
  QueueClock,
  QueueConfigError,
} from 'nestjs-redis-queues';
import { shardOf } from '../../libs/queue/src/redis/keys';
import { useQueueApps } from '@test/support/fixtures';
import { expectErrors, expectedErrors } from '@test/support/logs';
import { afterTime, pollUntil, uniquePrefix } from '@test/support/testing';

interface Seen {
  app: number;
  group: string;
  seqs: number[];
  attempt: number;
  start: number;
  end: number;
}

interface Message {
  seq: number;
}

/** Handler time per batch, random in [0, maxDelayMs): lets batches of different groups interleave. */
let maxDelayMs = 0;
/** Groups whose handler throws (at-least-once retries); each entry counts down the failures left. */
let failing = new Map<string, number>();
/** Groups whose handler waits until released (or aborted). */
let blocked = new Map<string, () => void>();
let aborted: string[] = [];
let seen: Seen[] = [];
let nextApp = 0;

async function handle(app: number, messages: Message[], ctx: BatchContext) {
  const start = performance.now();
  if (blocked.has(ctx.group)) {
    await new Promise<void>((resolve) => {
      blocked.set(ctx.group, resolve);
      ctx.signal.addEventListener('abort', () => {
        aborted.push(ctx.group);
        resolve();
      });
    });
  } else if (maxDelayMs > 0) {
    await new Promise((resolve) => setTimeout(resolve, Math.random() * maxDelayMs));
  }
  seen.push({ app, group: ctx.group, seqs: messages.map((m) => m.seq), attempt: ctx.attempt, start, end: 0 });
  const left = failing.get(ctx.group);
  if (left !== undefined && left > 0) {
    failing.set(ctx.group, left - 1);
    seen[seen.length - 1].end = performance.now();
    throw new Error(`upstream refused ${ctx.group}`);
  }
  seen[seen.length - 1].end = performance.now();
}

const DEAD_BATCH = /batch failed its last attempt and is dead-lettered/;

@Injectable()
class Reporter {
  static failedHook: { group: string; count: number; error: string }[] = [];
  private readonly app = nextApp++;

  @BatchConsumer('events', { concurrency: 8, onFailed: 'failed' })
  report(messages: Message[], ctx: BatchContext) {
    return handle(this.app, messages, ctx);
  }

  failed(error: Error, messages: Message[], ctx: BatchContext) {
    Reporter.failedHook.push({ group: ctx.group, count: messages.length, error: error.message });
  }
}

function reset() {
  seen = [];
  failing = new Map();
  blocked = new Map();
  aborted = [];
  maxDelayMs = 0;
  Reporter.failedHook = [];
}

const delivered = (group?: string) =>
  seen.filter((s) => group === undefined || s.group === group).flatMap((s) => s.seqs.map((seq) => `${s.group}/${seq}`));

describe.each(['at-most-once', 'at-least-once'] as const)('FixedQueue delivery, ordered %s', (delivery) => {
  const harness = useQueueApps();
  beforeEach(reset);

  async function startApp(prefix: string, options: Partial<FixedQueueOptions> = {}, consumers = true) {
    return harness.start({
      prefix,
      root: { idlePollMs: 100, shutdownTimeoutMs: 300, consumers },
      fixed: [{ name: 'events', shards: 4, delivery, maxWaitMs: 0, ...options }],
      providers: [Reporter],
    });
  }
  const start = async (prefix: string, options: Partial<FixedQueueOptions> = {}, consumers = true) =>
    (await startApp(prefix, options, consumers)).fixed<Message>('events');

  it('hands out one batch of a group at a time, in push order, across two apps; groups run in parallel', async () => {
    const prefix = uniquePrefix();
    const queue = await start(prefix, { batchSize: 10, capacity: 1000 });
    await start(prefix, { batchSize: 10, capacity: 1000 });
    maxDelayMs = 8;
    const cold = Array.from({ length: 30 }, (_, i) => `cold-${i}`);
    const pushed = new Map<string, number>();
    // The hot group gets half the traffic, interleaved with the cold ones.
    const writes: Promise<unknown>[] = [];
    for (let i = 0; i < 600; i++) {
      const group = i % 2 === 0 ? 'hot' : cold[i % cold.length];
      const seq = pushed.get(group) ?? 0;
      pushed.set(group, seq + 1);
      writes.push(queue.push(group, { seq }));
      if (i % 50 === 49) await Promise.all(writes.splice(0));
    }
    await Promise.all(writes);
    await pollUntil(() => delivered().length === 600, 'all 600 messages delivered', 30_000);

    for (const [group, count] of pushed) {
      const batches = seen.filter((s) => s.group === group).sort((a, b) => a.start - b.start);
      for (let i = 1; i < batches.length; i++) expect(batches[i].start).toBeGreaterThanOrEqual(batches[i - 1].end);
      expect(batches.flatMap((b) => b.seqs)).toEqual(Array.from({ length: count }, (_, i) => i));
    }
    expect(new Set(seen.map((s) => s.app)).size).toBe(2);
    const overlapping = seen.some((a) => seen.some((b) => a.group !== b.group && a.start < b.end && b.start < a.end));
    expect(overlapping).toBe(true);
    const stats = await pollUntil(async () => {
      const now = await queue.stats();
      return now.active === 0 && now;
    }, 'the last acknowledgements');
    expect(stats).toMatchObject({ pushed: 600, delivered: 600, pending: 0, active: 0, groups: 0 });
  });

  it('gives an unfinished batch back at shutdown, at once, so another app goes on with the group', async () => {
    const prefix = uniquePrefix();
    const firstApp = await startApp(prefix, { batchSize: 5, leaseMs: 30_000 });
    const first = firstApp.fixed<Message>('events');
    blocked.set('g', () => undefined);
    await first.pushMany(
      'g',
      Array.from({ length: 8 }, (_, seq) => ({ seq })),
    );
    await pollUntil(async () => (await first.stats()).active === 1, 'the batch held');
    await harness.close(firstApp.app);
    expect(aborted).toEqual(['g']);
    blocked.delete('g');
    seen = [];
    await start(prefix, { batchSize: 5, leaseMs: 30_000 });
    // Well within the 30 s lease: the group was let go of at shutdown.
    await pollUntil(() => delivered('g').length >= (delivery === 'at-least-once' ? 8 : 3), 'the rest delivered', 5_000);
    if (delivery === 'at-least-once') {
      // The same messages again, first, and not counted as an attempt.
      expect(seen[0]).toMatchObject({ seqs: [0, 1, 2, 3, 4], attempt: 1 });
      expect(delivered('g')).toEqual([0, 1, 2, 3, 4, 5, 6, 7].map((seq) => `g/${seq}`));
    } else {
      // At-most-once: the interrupted batch left Redis with its claim; the group moves on.
      expect(delivered('g')).toEqual([5, 6, 7].map((seq) => `g/${seq}`));
    }
  });

  it('refuses an acknowledgement from a delivery whose lease ran out, and moves on after the lease', async () => {
    const prefix = uniquePrefix();
    const started = await startApp(prefix, { batchSize: 3, leaseMs: 200 }, false);
    const queue = started.fixed<Message>('events');
    await queue.pushMany(
      'g',
      Array.from({ length: 5 }, (_, seq) => ({ seq })),
    );
    const shard = shardOf('g', 4);
    const claim = async () => {
      for (;;) {
        const { batches } = await queue.store.take(shard, 1, ['g']);
        if (batches.length > 0) return batches[0];
        await new Promise((resolve) => setTimeout(resolve, 20));
      }
    };
    const stale = await claim();
    expect(stale).toMatchObject({ group: 'g', attempt: 1, messages: [{ seq: 0 }, { seq: 1 }, { seq: 2 }] });
    // Held: nothing of the group is claimable until the lease runs out (a consumer that froze).
    expect((await queue.store.take(shard, 1, ['g'])).batches).toEqual([]);
    const fresh = await afterTime(
      started.app.get(QueueClock),
      200 + 50,
      async () => (await queue.store.take(shard, 1, ['g'])).batches[0],
      'the group claimable after the lease',
    );
    const groupKey = queue.store.groupKey(shard, 'g');
    if (delivery === 'at-least-once') {
      expect(fresh).toMatchObject({ attempt: 2, messages: [{ seq: 0 }, { seq: 1 }, { seq: 2 }] });
    } else {
      expect(fresh).toMatchObject({ attempt: 1, messages: [{ seq: 3 }, { seq: 4 }] });
    }
    const { redis } = harness;
    const before = await redis.lrange(groupKey, 0, -1);
    const late = await queue.store.ack(shard, [{ group: 'g', token: stale.token! }]);
    expect(late.dueAt).toEqual([null]);
    expect(await redis.lrange(groupKey, 0, -1)).toEqual(before);
    const current = await queue.store.ack(shard, [{ group: 'g', token: fresh.token! }]);
    expect(current.dueAt).toEqual([delivery === 'at-least-once' ? expect.any(Number) : -1]);
    expect(await redis.llen(groupKey)).toBe(delivery === 'at-least-once' ? 2 : 0);
  });

  it('aborts ctx.signal when the delivery loses its lease', async () => {
    const prefix = uniquePrefix();
    const queue = await start(prefix, { batchSize: 5, leaseMs: 150 });
    blocked.set('g', () => undefined);
    await queue.push('g', { seq: 0 });
    await pollUntil(async () => (await queue.stats()).active === 1, 'the batch held');
    // Another delivery took the group over (what a frozen consumer finds when it wakes up).
    await harness.redis.hset(queue.store.keys.key(shardOf('g', 4), 'held'), 'g', 'someone-else:1:1:0');
    await pollUntil(() => aborted.includes('g'), 'the signal aborted by the heartbeat');
  });
});

describe('FixedQueue at-least-once failures', () => {
  const harness = useQueueApps();
  /** The clock of the application `start` made last. */
  let clock: QueueClock;
  beforeEach(reset);

  async function start(prefix: string, options: Partial<FixedQueueOptions> = {}) {
    const started = await harness.start({
      prefix,
      root: { idlePollMs: 100, shutdownTimeoutMs: 300 },
      fixed: [
        {
          name: 'events',
          shards: 4,
          delivery: 'at-least-once',
          maxWaitMs: 0,
          batchSize: 5,
          maxAttempts: 3,
          backoff: { type: 'exponential', delayMs: 20 },
          ...options,
        },
      ],
      providers: [Reporter],
    });
    clock = started.app.get(QueueClock);
    return started.fixed<Message>('events');
  }

  it('delivers a failing batch again with attempt + 1, then dead-letters it, and the group moves on', async () => {
    expectErrors(DEAD_BATCH);
    const queue = await start(uniquePrefix());
    failing.set('bad', 3);
    await queue.pushMany(
      'bad',
      Array.from({ length: 5 }, (_, seq) => ({ seq })),
    );
    await queue.pushMany(
      'bad',
      Array.from({ length: 3 }, (_, seq) => ({ seq: 5 + seq })),
    );
    // Retried 20 then 40 ms after each failure.
    await afterTime(clock, 200, () => delivered('bad').length === 5 * 3 + 3, 'three attempts, then the next batch');
    expect(seen.map((s) => [s.attempt, s.seqs])).toEqual([
      [1, [0, 1, 2, 3, 4]],
      [2, [0, 1, 2, 3, 4]],
      [3, [0, 1, 2, 3, 4]],
      [1, [5, 6, 7]],
    ]);
    const dead = await pollUntil(async () => (await queue.deadLetters()).at(0), 'the dead batch');
    expect(dead).toMatchObject({
      group: 'bad',
      attempts: 3,
      messages: [0, 1, 2, 3, 4].map((seq) => ({ seq })),
      lastError: 'Error: upstream refused bad',
    });
    expect(dead.pushedAt).toHaveLength(5);
    expect(expectedErrors()).toEqual([expect.stringMatching(/group="bad" size=5 .*error="upstream refused bad"/)]);
    expect(Reporter.failedHook).toEqual([{ group: 'bad', count: 5, error: 'upstream refused bad' }]);
    await pollUntil(async () => (await queue.stats()).delivered === 3, 'the next batch acknowledged');
    expect(await queue.stats()).toMatchObject({ dead: 5, deadTotal: 5, delivered: 3, redelivered: 10, pending: 0 });

    seen = [];
    expect(await queue.requeue(dead.id)).toEqual({ id: dead.id, dropped: 0 });
    await pollUntil(() => delivered('bad').length === 5, 'the requeued batch delivered');
    expect(seen[0]).toMatchObject({ attempt: 1, seqs: [0, 1, 2, 3, 4] });
    expect(await queue.deadLetters()).toEqual([]);
    // dead: in dead batches now; deadTotal: ever, as DelayQueue's.
    expect(await queue.stats()).toMatchObject({ dead: 0, deadTotal: 5, requeued: 5 });
    expect(await queue.requeue(dead.id)).toBeNull();
    expect(await queue.requeue('nonsense')).toBeNull();
  });

  it('lists dead batches newest first across pages of script calls, each once', async () => {
    expectErrors(DEAD_BATCH);
    const queue = await start(uniquePrefix(), { maxAttempts: 1, shards: 2 });
    const groups = Array.from({ length: 45 }, (_, i) => `g${i}`);
    for (const group of groups) failing.set(group, 1);
    await Promise.all(groups.map((group, seq) => queue.push(group, { seq })));
    await pollUntil(async () => (await queue.stats()).dead === 45, 'every batch dead');
    await pollUntil(() => expectedErrors().length === 45, 'a line for each dead batch');
    const all = await queue.deadLetters(100);
    expect(all).toHaveLength(45);
    expect(new Set(all.map((dead) => dead.id)).size).toBe(45);
    expect(all.map((dead) => dead.group).sort()).toEqual([...groups].sort());
    expect(all.map((dead) => dead.diedAt)).toEqual([...all.map((dead) => dead.diedAt)].sort((a, b) => b - a));
    expect((await queue.deadLetters(30)).map((dead) => dead.id)).toEqual(all.slice(0, 30).map((dead) => dead.id));
  });

  it('counts in dead only the dead batches the dead-letter capacity keeps, in deadTotal every one', async () => {
    expectErrors(DEAD_BATCH);
    const queue = await start(uniquePrefix(), { maxAttempts: 1, shards: 1, deadLetter: { capacity: 2 } });
    for (const [i, group] of ['a', 'b', 'c', 'd'].entries()) {
      failing.set(group, 1);
      await queue.pushMany(
        group,
        Array.from({ length: i + 1 }, (_, seq) => ({ seq })),
      );
    }
    await pollUntil(async () => (await queue.stats()).deadTotal === 1 + 2 + 3 + 4, 'every batch dead');
    const kept = await queue.deadLetters();
    expect(kept).toHaveLength(2);
    const inKept = kept.reduce((sum, dead) => sum + dead.messages.length, 0);
    expect(inKept).toBeLessThan(10);
    expect((await queue.stats()).dead).toBe(inKept);
  });

  it('counts unacknowledged messages evicted by capacity as dropped and never delivers them again', async () => {
    const queue = await start(uniquePrefix(), { capacity: 10 });
    failing.set('g', 1);
    blocked.set('g', () => undefined);
    await queue.pushMany(
      'g',
      Array.from({ length: 5 }, (_, seq) => ({ seq })),
    );
    await pollUntil(async () => (await queue.stats()).active === 1, 'the first batch held');
    // 5 held + 8 new > capacity 10: the 3 oldest (held) messages are evicted.
    expect(
      await queue.pushMany(
        'g',
        Array.from({ length: 8 }, (_, seq) => ({ seq: 5 + seq })),
      ),
    ).toEqual({ dropped: 3 });
    const release = blocked.get('g')!;
    blocked.delete('g');
    release();
    await afterTime(clock, 200, () => delivered('g').length === 5 + 2 + 8, 'the retry and the rest');
    expect(seen.map((s) => [s.attempt, s.seqs])).toEqual([
      [1, [0, 1, 2, 3, 4]],
      [2, [3, 4]],
      [1, [5, 6, 7, 8, 9]],
      [1, [10, 11, 12]],
    ]);
    expect(await queue.stats()).toMatchObject({ dropped: 3, pending: 0, delivered: 10 });
  });

  it('is refused with ordered: false, and with batches too large to bury in one short script', async () => {
    await expect(start(uniquePrefix(), { ordered: false })).rejects.toThrow(QueueConfigError);
    await expect(start(uniquePrefix(), { ordered: false })).rejects.toThrow(/needs ordered: true/);
    await expect(start(uniquePrefix(), { batchSize: 5000, capacity: 5000 })).rejects.toThrow(
      /batchSize must be ≤ 4000 with delivery 'at-least-once'/,
    );
  });
});

describe('FixedQueue unordered', () => {
  const harness = useQueueApps();
  beforeEach(reset);

  it("runs a hot group's batches in parallel", async () => {
    const started = await harness.start({
      root: { idlePollMs: 100 },
      fixed: [{ name: 'events', shards: 4, ordered: false, batchSize: 10, maxWaitMs: 50 }],
      providers: [Reporter],
    });
    const queue = started.fixed<Message>('events');
    maxDelayMs = 30;
    await queue.pushMany(
      'hot',
      Array.from({ length: 200 }, (_, seq) => ({ seq })),
    );
    await pollUntil(() => delivered('hot').length === 200, 'the hot group delivered');
    const overlapping = seen.some((a) => seen.some((b) => a !== b && a.start < b.end && b.start < a.end));
    expect(overlapping).toBe(true);
  });
});

@Injectable()
class SlowTask {
  static aborted: string[] = [];
  static running: string[] = [];

  @DelayConsumer('tasks')
  run(_payload: unknown, ctx: DelayContext) {
    SlowTask.running.push(ctx.id);
    return new Promise<void>((resolve) =>
      ctx.signal.addEventListener('abort', () => {
        SlowTask.aborted.push(ctx.id);
        resolve();
      }),
    );
  }
}

describe('DelayContext.signal', () => {
  const harness = useQueueApps();

  it('aborts when the running task is cancelled (its lease is lost)', async () => {
    const started = await harness.start({
      root: { idlePollMs: 100 },
      delay: [{ name: 'tasks', shards: 2, leaseMs: 150 }],
      providers: [SlowTask],
    });
    const tasks = started.delay('tasks');
    await tasks.schedule({}, { id: 'long', delayMs: 0 });
    await pollUntil(async () => (await tasks.get('long'))?.state === 'active', 'the task running');
    expect(await tasks.cancel('long')).toBe(true);
    await pollUntil(() => SlowTask.aborted.includes('long'), 'the signal aborted');
  });

  it('aborts at once when cancel() is called in the process running the task, whatever the lease', async () => {
    const started = await harness.start({
      delay: [{ name: 'tasks', shards: 2, leaseMs: 60_000 }],
      providers: [SlowTask],
    });
    const tasks = started.delay('tasks');
    await tasks.schedule({}, { id: 'cancelled here', delayMs: 0 });
    await pollUntil(() => SlowTask.running.includes('cancelled here'), 'the handler running');
    expect(await tasks.cancel('cancelled here')).toBe(true);
    // Not at the next heartbeat (20 s away): by the time cancel() resolves.
    expect(SlowTask.aborted).toContain('cancelled here');
  });
});
