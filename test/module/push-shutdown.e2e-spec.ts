import { type FixedQueue, QueueConnectionError } from 'nestjs-redis-queues';
import { startRedis, timed } from '@test/support/faults';
import { recordTasks, useQueueApps } from '@test/support/fixtures';
import { deferred } from '@test/support/testing';

const QUEUE = { name: 'events', shards: 4, capacity: 100_000 };

/** A handler still running when close() begins, which pushes (without awaiting) as it finishes. */
const finishing = { release: deferred(), events: undefined as FixedQueue<{ n: number }> | undefined };
const reporter = recordTasks('tasks', {}, async () => {
  await finishing.release.promise;
  for (let n = 0; n < 100; n++) void finishing.events!.push(`h${n % 10}`, { n });
});

/** A push accepted before `app.close()` is written before the connections close (or says it was not sent). */
describe('FixedQueue pushes made just before app.close() (real redis-server)', () => {
  const harness = useQueueApps();

  /** The `n` of every message the groups hold, read back by a second application on the same prefix. */
  async function storedNumbers(prefix: string, groups: string[]): Promise<number[]> {
    const reader = (await harness.start({ prefix, fixed: [QUEUE] })).fixed<{ n: number }>('events');
    const heads = await Promise.all(groups.map((group) => reader.peek(group, 1000)));
    return heads.flatMap((head) => head.map(({ message }) => message.n)).sort((a, b) => a - b);
  }

  /** Pushes `count` messages `{ n }` over `groups` without awaiting them, closes the app, then settles them. */
  async function pushThenClose(count: number, groups: string[]) {
    const { app, prefix, fixed } = await harness.start({ fixed: [QUEUE] });
    const queue: FixedQueue<{ n: number }> = fixed('events');
    const pushes = Array.from({ length: count }, (_, n) => queue.push(groups[n % groups.length], { n }));
    await harness.close(app);
    const settled = await Promise.allSettled(pushes);
    const resolved = settled.flatMap((result, n) => (result.status === 'fulfilled' ? [n] : []));
    const rejected = settled.flatMap((result) => (result.status === 'rejected' ? [result.reason as unknown] : []));
    return { resolved, rejected, stored: await storedNumbers(prefix, groups) };
  }

  const groupNames = (count: number) => Array.from({ length: count }, (_, g) => `g${g}`);

  it('writes 100 pushes made right before close() and resolves every one', async () => {
    const { resolved, rejected, stored } = await pushThenClose(100, groupNames(10));
    expect(rejected).toEqual([]);
    expect(resolved).toHaveLength(100);
    expect(stored).toEqual(resolved);
  });

  it('settles 20,000 un-awaited pushes: each is in Redis, or was rejected as not sent and is absent', async () => {
    const { resolved, rejected, stored } = await pushThenClose(20_000, groupNames(500));
    for (const reason of rejected) {
      expect(reason).toBeInstanceOf(QueueConnectionError);
      expect((reason as QueueConnectionError).outcome).toBe('not-sent');
    }
    expect(stored).toEqual(resolved);
    // Redis answered all along: nothing had a reason not to be sent.
    expect(rejected).toHaveLength(0);
  });

  it('writes the pushes a handler makes while it finishes during close()', async () => {
    finishing.release = deferred();
    const { app, prefix, fixed, delay } = await harness.start({
      fixed: [QUEUE],
      delay: [{ name: 'tasks', shards: 1 }],
      providers: [reporter.consumer],
    });
    finishing.events = fixed('events');
    await delay('tasks').schedule({}, { id: 'report' });
    await reporter.untilTasks(1);
    const closing = harness.close(app);
    finishing.release.resolve();
    await closing;
    const groups = Array.from({ length: 10 }, (_, g) => `h${g}`);
    expect(await storedNumbers(prefix, groups)).toEqual(Array.from({ length: 100 }, (_, n) => n));
  });

  it('rejects a push made once close() has begun as not sent, and writes nothing', async () => {
    const { app, prefix, fixed } = await harness.start({ fixed: [QUEUE] });
    const queue: FixedQueue<{ n: number }> = fixed('events');
    await harness.close(app);
    await expect(queue.push('late', { n: 1 })).rejects.toMatchObject({
      name: 'QueueConnectionError',
      outcome: 'not-sent',
    });
    expect(await storedNumbers(prefix, ['late'])).toEqual([]);
  });

  it('settles every push and closes within the shutdown budget while Redis is frozen', async () => {
    const server = await startRedis();
    try {
      const { app, fixed } = await harness.start({
        connection: server.url,
        root: { shutdownTimeoutMs: 500, commandTimeoutMs: 1000 },
        fixed: [QUEUE],
      });
      const queue: FixedQueue<{ n: number }> = fixed('events');
      await queue.push('g', { n: 0 });
      process.kill(server.pid, 'SIGSTOP');
      // Handled from the start: they reject while the close is awaited.
      const pushes = Promise.allSettled(Array.from({ length: 1000 }, (_, n) => queue.push(`g${n % 50}`, { n })));
      const { ms, error } = await timed(harness.close(app));
      expect(error).toBeUndefined();
      // The budget plus timers and a busy machine.
      expect(ms).toBeLessThan(500 + 1000 + 700);
      const settled = await pushes;
      for (const result of settled) expect(result).toMatchObject({ status: 'rejected' });
    } finally {
      process.kill(server.pid, 'SIGCONT');
      await server.stop();
    }
  });
});

describe('DelayQueue schedules made just before app.close() (real redis-server)', () => {
  const harness = useQueueApps();

  it('writes 100 schedules made right before close() and resolves every one', async () => {
    const { app, prefix, delay } = await harness.start({ delay: [{ name: 'tasks', shards: 4 }] });
    const ids = Array.from({ length: 100 }, (_, n) => `t${n}`);
    const schedules = ids.map((id, n) => delay('tasks').schedule({ n }, { id, delayMs: 3_600_000 }));
    await harness.close(app);
    const settled = await Promise.allSettled(schedules);
    expect(settled.filter(({ status }) => status === 'rejected')).toEqual([]);
    const reader = (await harness.start({ prefix, delay: [{ name: 'tasks', shards: 4 }] })).delay('tasks');
    const stored = await Promise.all(ids.map((id) => reader.get(id)));
    expect(stored.filter((task) => task?.state === 'scheduled')).toHaveLength(100);
  });

  it('rejects a schedule made once close() has begun as not sent, and writes nothing', async () => {
    const { app, prefix, delay } = await harness.start({ delay: [{ name: 'tasks', shards: 4 }] });
    await harness.close(app);
    await expect(delay('tasks').schedule({ n: 1 }, { id: 'late' })).rejects.toMatchObject({
      name: 'QueueConnectionError',
      outcome: 'not-sent',
    });
    const reader = (await harness.start({ prefix, delay: [{ name: 'tasks', shards: 4 }] })).delay('tasks');
    expect(await reader.get('late')).toBeNull();
  });
});
