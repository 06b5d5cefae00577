import { type FixedQueueOptions, QueueInputError } from 'nestjs-redis-queues';
import { shardOf } from '../../libs/queue/src/redis/keys';
import { useQueueApps } from '@test/support/fixtures';
import { fixedQueueViolations } from '@test/support/invariants';
import { rawClient } from '@test/support/testing';

const SHARDS = 2;

describe('FixedQueue.clear(group)', () => {
  const harness = useQueueApps({ client: rawClient });

  async function start(options: Partial<FixedQueueOptions> = {}) {
    const { prefix, fixed } = await harness.start({
      root: { consumers: false },
      fixed: [{ name: 'events', shards: SHARDS, maxWaitMs: 0, ...options }],
    });
    const queue = fixed<{ n: number }>('events');
    const violations = () =>
      fixedQueueViolations(harness.redis, { prefix, name: 'events', shards: SHARDS, capacity: 1000 });
    /** Claims the group's next batch as a consumer would (maxWaitMs 0: every group is due at once). */
    const claim = async (group: string) => {
      const shard = shardOf(group, SHARDS);
      const { batches } = await queue.store.take(shard, 1, [group]);
      return { shard, batch: batches[0] };
    };
    return { queue, violations, claim };
  }

  const numbers = (from: number, count: number) => Array.from({ length: count }, (_, i) => ({ n: from + i }));

  it.each([
    ['unordered', { ordered: false }],
    ['ordered', {}],
  ] as const)('deletes a group of an %s queue, counted as dropped; other groups stay', async (_label, options) => {
    const { queue, violations, claim } = await start(options);
    await queue.pushMany('a', numbers(0, 5));
    await queue.pushMany('b', numbers(0, 3));
    expect(await queue.clear('a')).toEqual({ dropped: 5 });
    expect(await queue.size('a')).toBe(0);
    expect(await queue.stats()).toMatchObject({ groups: 1, pending: 3, pushed: 8, dropped: 5, delivered: 0 });
    expect(await violations()).toEqual([]);
    // Nothing of the group is handed out any more; the other group is.
    expect((await claim('a')).batch).toBeUndefined();
    expect((await claim('b')).batch.messages).toEqual(numbers(0, 3));
    // A group cleared twice, or never pushed to, has nothing to drop.
    expect(await queue.clear('a')).toEqual({ dropped: 0 });
    expect(await queue.clear('never')).toEqual({ dropped: 0 });
    expect((await queue.stats()).dropped).toBe(5);
  });

  it('clears pushes made just before it, in the same turn', async () => {
    const { queue } = await start();
    const pushed = queue.push('a', { n: 0 });
    const cleared = queue.clear('a');
    await pushed;
    expect(await cleared).toEqual({ dropped: 1 });
    expect(await queue.size('a')).toBe(0);
  });

  it('refuses a bad group name, writing nothing', async () => {
    const { queue } = await start();
    await expect(queue.clear('')).rejects.toThrow(QueueInputError);
    await expect(queue.clear(42 as never)).rejects.toThrow(/group must be a string, got number/);
  });

  it('at-least-once: the delivery under way finishes harmlessly, trimming nothing pushed after the clear', async () => {
    const { queue, violations, claim } = await start({ delivery: 'at-least-once' });
    await queue.pushMany('a', numbers(0, 3));
    const { shard, batch } = await claim('a');
    expect(batch.messages).toEqual(numbers(0, 3));

    expect(await queue.clear('a')).toEqual({ dropped: 3 });
    expect(await queue.stats()).toMatchObject({ pending: 0, dropped: 3, active: 1, groups: 1 });
    await queue.pushMany('a', numbers(10, 2));
    // Still held: no second batch of the group while the first is out.
    expect((await claim('a')).batch).toBeUndefined();

    const [due] = (await queue.store.ack(shard, [{ group: 'a', token: batch.token! }])).dueAt;
    expect(due).not.toBeNull();
    expect(await queue.size('a')).toBe(2);
    expect(await queue.stats()).toMatchObject({ pending: 2, delivered: 0, active: 0, groups: 1 });
    expect(await violations()).toEqual([]);
    const next = (await claim('a')).batch;
    expect(next.messages).toEqual(numbers(10, 2));
    expect(next.attempt).toBe(1);
  });

  it('at-least-once: acknowledging a cleared delivery counts nothing as delivered', async () => {
    const { queue, violations, claim } = await start({ delivery: 'at-least-once' });
    await queue.pushMany('a', numbers(0, 3));
    const { shard, batch } = await claim('a');
    await queue.clear('a');
    expect((await queue.store.ack(shard, [{ group: 'a', token: batch.token! }])).dueAt).toEqual([-1]);
    expect(await queue.stats()).toMatchObject({ pending: 0, delivered: 0, dropped: 3, active: 0, groups: 0 });
    expect(await violations()).toEqual([]);
  });

  it('at-least-once: a failed delivery of a cleared group has nothing left to retry', async () => {
    const { queue, claim } = await start({ delivery: 'at-least-once', maxAttempts: 3 });
    await queue.pushMany('a', numbers(0, 3));
    const { shard, batch } = await claim('a');
    await queue.clear('a');
    await queue.pushMany('a', numbers(10, 2));
    const failed = await queue.store.fail(shard, { group: 'a', token: batch.token! }, 0, 'Error: boom');
    expect(failed.fate).toBe('gone');
    const next = (await claim('a')).batch;
    expect(next.messages).toEqual(numbers(10, 2));
    expect(next.attempt).toBe(1);
    expect(await queue.deadLetters()).toEqual([]);
  });

  it('at-least-once: a retry waiting for its backoff is let go', async () => {
    const { queue, violations, claim } = await start({ delivery: 'at-least-once', maxAttempts: 3 });
    await queue.pushMany('a', numbers(0, 3));
    const { shard, batch } = await claim('a');
    const failed = await queue.store.fail(shard, { group: 'a', token: batch.token! }, 60_000, 'Error: boom');
    expect(failed.fate).toBe('retry');
    expect(await queue.clear('a')).toEqual({ dropped: 3 });
    expect(await queue.stats()).toMatchObject({ pending: 0, groups: 0, active: 0 });
    // New messages are not held back by the cleared batch's backoff.
    await queue.pushMany('a', numbers(10, 2));
    const next = (await claim('a')).batch;
    expect(next.messages).toEqual(numbers(10, 2));
    expect(next.attempt).toBe(1);
    await queue.store.ack(shard, [{ group: 'a', token: next.token! }]);
    expect(await violations()).toEqual([]);
  });

  it('at-most-once ordered: messages pushed while a batch is out are cleared; its acknowledgement is harmless', async () => {
    const { queue, violations, claim } = await start();
    await queue.pushMany('a', numbers(0, 3));
    const { shard, batch } = await claim('a');
    await queue.pushMany('a', numbers(10, 2));
    expect(await queue.clear('a')).toEqual({ dropped: 2 });
    await queue.push('a', { n: 20 });
    await queue.store.ack(shard, [{ group: 'a', token: batch.token! }]);
    expect(await queue.stats()).toMatchObject({ pending: 1, delivered: 3, dropped: 2, groups: 1 });
    expect((await claim('a')).batch.messages).toEqual([{ n: 20 }]);
    expect(await violations()).toEqual([]);
  });
});
