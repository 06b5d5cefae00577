import { QueueInputError, QueueInUseError } from 'nestjs-redis-queues';
import { recordBatches, recordTasks, useQueueApps } from '@test/support/fixtures';
import { dumpsMatching, keysMatching, type RawRedis } from '@test/support/testing';

const reports = recordBatches<{ n: number }>('events');
const reminders = recordTasks<{ n: number }>('reminders');

const SHARDS = 4;
const GROUPS = 10_000;

/** The keys of one queue: its shards' (`{queue:shard}`) and its record (`{queue}`). */
const keysOfQueue = (prefix: string, queue: string) => `${prefix}:{${queue}[:}]*`;

/** Every key of one queue. */
async function keysOf(redis: RawRedis, prefix: string, queue: string): Promise<string[]> {
  // A cluster client knows its masters only once connected.
  await redis.ping();
  return keysMatching(redis, keysOfQueue(prefix, queue));
}

/** Every key of a queue with what it holds, to show that obliterating another queue left it alone. */
function snapshot(redis: RawRedis, prefix: string, queue: string): Promise<Record<string, string>> {
  return dumpsMatching(redis, keysOfQueue(prefix, queue));
}

describe('obliterate', () => {
  const harness = useQueueApps();

  async function start(consumers: boolean, keepers = false) {
    return harness.start({
      root: { consumers, idlePollMs: 500 },
      fixed: [
        { name: 'events', shards: SHARDS, maxWaitMs: 0, delivery: 'at-least-once', maxAttempts: 1 },
        { name: 'kept', shards: 2 },
      ],
      delay: [
        { name: 'reminders', shards: SHARDS, maxAttempts: 1 },
        { name: 'kept-tasks', shards: 2 },
      ],
      providers: keepers ? [reports.consumer, reminders.consumer] : [],
    });
  }

  it('deletes every key of a FixedQueue of 10,000 groups with dead batches and held groups, and nothing else', async () => {
    const { prefix, fixed } = await start(false);
    const events = fixed<{ n: number }>('events');
    const kept = fixed<{ n: number }>('kept');
    await Promise.all(Array.from({ length: GROUPS }, (_, n) => events.push(`game-${n}`, { n })));
    await events.pushMany('game-0', [{ n: 1 }, { n: 2 }]);
    await kept.push('game-0', { n: 0 });
    await harness.start({ prefix, delay: [{ name: 'kept-tasks', shards: 2 }] }).then(async ({ delay }) => {
      await delay('kept-tasks').schedule({ n: 0 }, { id: 'later', delayMs: 60_000 });
    });
    // Dead batches (the one attempt failed) and groups held by deliveries under way, in every shard.
    let dead = 0;
    for (let shard = 0; shard < SHARDS; shard++) {
      const { due } = await events.store.take(shard, 20, []);
      const { batches } = await events.store.take(shard, 20, due);
      for (const { group, token } of batches.slice(0, 10)) {
        const { fate } = await events.store.fail(shard, { group, token: token! }, 0, 'Error: boom');
        if (fate === 'dead') dead++;
      }
    }
    expect(dead).toBe(10 * SHARDS);
    await events.pauseGroup('game-5');
    expect((await events.deadLetters(1000)).length).toBe(dead);
    expect((await events.stats()).active).toBe(10 * SHARDS);
    expect((await keysOf(harness.redis, prefix, 'events')).length).toBeGreaterThan(GROUPS - dead);
    const untouched = {
      kept: await snapshot(harness.redis, prefix, 'kept'),
      tasks: await snapshot(harness.redis, prefix, 'kept-tasks'),
    };

    await events.obliterate();

    expect(await keysOf(harness.redis, prefix, 'events')).toEqual([]);
    expect(await snapshot(harness.redis, prefix, 'kept')).toEqual(untouched.kept);
    expect(await snapshot(harness.redis, prefix, 'kept-tasks')).toEqual(untouched.tasks);
    expect(await events.stats()).toMatchObject({ groups: 0, pending: 0, pushed: 0, dead: 0, active: 0 });
    // Usable again at once.
    expect(await events.push('game-1', { n: 1 })).toEqual({ dropped: 0 });
    expect(await events.size('game-1')).toBe(1);
  });

  it('deletes every key of a DelayQueue (scheduled, running and dead tasks), and nothing else', async () => {
    const { prefix, fixed, delay } = await start(false);
    const tasks = delay<{ n: number }>('reminders');
    await Promise.all(
      Array.from({ length: 2000 }, (_, n) => tasks.schedule({ n }, { id: `t${n}`, delayMs: n < 100 ? 0 : n * 100 })),
    );
    for (let shard = 0; shard < SHARDS; shard++) {
      const [first, second] = (await tasks.store.claim(shard, 2)).tasks;
      // One dead (its one attempt failed), one running.
      expect(await tasks.store.fail(shard, first.id, first.token, 0, 'Error: boom')).toMatchObject({ fate: 'dead' });
      expect(second).toBeDefined();
    }
    await fixed('kept').push('g', { n: 0 });
    await delay('kept-tasks').schedule({ n: 0 }, { id: 'later', delayMs: 60_000 });
    expect(await tasks.stats()).toMatchObject({ dead: SHARDS, active: SHARDS });
    const untouched = {
      kept: await snapshot(harness.redis, prefix, 'kept'),
      tasks: await snapshot(harness.redis, prefix, 'kept-tasks'),
    };

    await tasks.obliterate();

    expect(await keysOf(harness.redis, prefix, 'reminders')).toEqual([]);
    expect(await snapshot(harness.redis, prefix, 'kept')).toEqual(untouched.kept);
    expect(await snapshot(harness.redis, prefix, 'kept-tasks')).toEqual(untouched.tasks);
    expect(await tasks.get('t1')).toBeNull();
    expect(await tasks.stats()).toMatchObject({ scheduled: 0, active: 0, dead: 0 });
  });

  it('deletes what was pushed or scheduled just before it, in the same turn', async () => {
    const { prefix, fixed, delay } = await start(false);
    const pushed = fixed('events').push('last-moment', { n: 0 });
    const scheduled = delay('reminders').schedule({ n: 0 }, { id: 'last-moment' });
    await Promise.all([fixed('events').obliterate(), delay('reminders').obliterate(), pushed, scheduled]);
    expect(await keysOf(harness.redis, prefix, 'events')).toEqual([]);
    expect(await keysOf(harness.redis, prefix, 'reminders')).toEqual([]);
  });

  it('is refused while consumers of the queue run in this process, unless forced', async () => {
    const { prefix, fixed, delay } = await start(true, true);
    await fixed('events').push('g', { n: 0 });
    await delay('reminders').schedule({ n: 0 }, { id: 'later', delayMs: 60_000 });

    for (const queue of [fixed('events'), delay('reminders')]) {
      const refused = await queue.obliterate().catch((error: unknown) => error);
      expect(refused).toBeInstanceOf(QueueInUseError);
      expect((refused as QueueInUseError).consumers).toEqual(['RecordingConsumer.handle']);
      expect((refused as Error).message).toMatch(
        new RegExp(
          `queue "${queue.name}" cannot be obliterated while its consumers run in this process \\(RecordingConsumer.handle\\).*force: true`,
        ),
      );
      await expect(queue.obliterate({ force: false })).rejects.toThrow(QueueInUseError);
    }
    await reports.untilMessages(1);
    expect(await delay('reminders').get('later')).toMatchObject({ state: 'scheduled' });
    expect(await harness.redis.exists(`${prefix}:{events}:meta`)).toBe(1);
    expect(await harness.redis.exists(`${prefix}:{reminders}:meta`)).toBe(1);

    await fixed('events').obliterate({ force: true });
    await delay('reminders').obliterate({ force: true });
    expect(await keysOf(harness.redis, prefix, 'events')).toEqual([]);
    expect(await keysOf(harness.redis, prefix, 'reminders')).toEqual([]);
  });

  it('is not refused for consumers that do not run here (consumers: false)', async () => {
    const { prefix, fixed } = await start(false, true);
    await fixed('events').push('g', { n: 0 });
    await fixed('events').obliterate();
    expect(await keysOf(harness.redis, prefix, 'events')).toEqual([]);
  });

  it('refuses options it does not know, deleting nothing', async () => {
    const { prefix, fixed, delay } = await start(false);
    await fixed('events').push('g', { n: 0 });
    await harness.redis.ping();
    const before = await keysMatching(harness.redis, `${prefix}:*`);
    expect(before.length).toBeGreaterThan(0);
    for (const queue of [fixed('events'), delay('reminders')]) {
      await expect(queue.obliterate({ forse: true } as never)).rejects.toThrow(
        new QueueInputError('obliterate(options): forse is not an option (did you mean force?)'),
      );
      await expect(queue.obliterate({ force: 'yes' } as never)).rejects.toThrow(
        /obliterate\(options\): force must be true or false \(got "yes", a string\)/,
      );
      await expect(queue.obliterate(true as never)).rejects.toThrow(QueueInputError);
    }
    expect(await keysMatching(harness.redis, `${prefix}:*`)).toEqual(before);
  });
});
