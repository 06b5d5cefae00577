import type { FixedQueue, FixedQueueOptions } from 'nestjs-redis-queues';
import type { ClaimedBatch } from '../../libs/queue/src/fixed-queue/fixed-queue.store';
import { shardOf } from '../../libs/queue/src/redis/keys';
import { useQueueApps } from '@test/support/fixtures';
import { pollUntil } from '@test/support/testing';

/**
 * `stats().redelivered` counts messages handed out again (a claim whose attempt is above 1), not
 * failures or lapsed leases: a retry that never happens (its messages expired, were cleared, or were
 * buried when the last lease ran out) delivers nothing again.
 */
describe('FixedQueue stats().redelivered (at-least-once)', () => {
  const harness = useQueueApps();

  async function start(options: Partial<FixedQueueOptions>): Promise<FixedQueue<{ n: number }>> {
    const started = await harness.start({
      root: { consumers: false },
      fixed: [
        {
          name: 'events',
          shards: 1,
          batchSize: 3,
          maxWaitMs: 0,
          delivery: 'at-least-once',
          backoff: { type: 'exponential', delayMs: 0 },
          ...options,
        },
      ],
    });
    return started.fixed('events');
  }

  const shard = shardOf('g', 1);

  /** The next batch of group g with messages, polled until one comes (a lease or a retry delay may hold it). */
  async function claim(queue: FixedQueue<{ n: number }>): Promise<ClaimedBatch> {
    return pollUntil(
      async () => (await queue.store.take(shard, 1, ['g'])).batches.find((batch) => batch.messages.length > 0),
      'a batch of g',
    );
  }

  async function push(queue: FixedQueue<{ n: number }>, count: number): Promise<void> {
    await queue.pushMany(
      'g',
      Array.from({ length: count }, (_, n) => ({ n })),
    );
  }

  it('counts the messages of each delivery with attempt > 1, when it is claimed', async () => {
    const queue = await start({ maxAttempts: 3 });
    await push(queue, 3);
    const first = await claim(queue);
    await queue.store.fail(shard, { group: 'g', token: first.token! }, 0, 'boom');
    expect((await queue.stats()).redelivered).toBe(0);
    const second = await claim(queue);
    expect(second).toMatchObject({ attempt: 2, messages: [{ n: 0 }, { n: 1 }, { n: 2 }] });
    expect((await queue.stats()).redelivered).toBe(3);
    await queue.store.ack(shard, [{ group: 'g', token: second.token! }]);
    expect(await queue.stats()).toMatchObject({ redelivered: 3, delivered: 3, pending: 0 });
  });

  it('does not count a retry whose messages were cleared while it waited', async () => {
    const queue = await start({ backoff: { type: 'exponential', delayMs: 60_000 } });
    await push(queue, 3);
    const first = await claim(queue);
    expect(await queue.store.fail(shard, { group: 'g', token: first.token! }, 60_000, 'boom')).toMatchObject({
      fate: 'retry',
    });
    expect(await queue.clear('g')).toEqual({ dropped: 3 });
    expect((await queue.stats()).redelivered).toBe(0);
  });

  it('does not count a retry whose messages expired (maxAgeMs) before it came', async () => {
    const queue = await start({ maxAgeMs: 100 });
    await push(queue, 3);
    const first = await claim(queue);
    await queue.store.fail(shard, { group: 'g', token: first.token! }, 150, 'boom');
    await new Promise((resolve) => setTimeout(resolve, 200));
    await push(queue, 1);
    const next = await claim(queue);
    expect(next).toMatchObject({ attempt: 1, messages: [{ n: 0 }] });
    expect(await queue.stats()).toMatchObject({ redelivered: 0, expired: 3 });
  });

  it('does not count a batch buried when its last lease ran out', async () => {
    const queue = await start({ maxAttempts: 2, leaseMs: 100 });
    await push(queue, 3);
    const first = await claim(queue);
    await queue.store.fail(shard, { group: 'g', token: first.token! }, 0, 'boom');
    // The second and last delivery: counted once, then its lease runs out.
    expect(await claim(queue)).toMatchObject({ attempt: 2 });
    // A claim finds the lapsed lease and buries the batch.
    await pollUntil(async () => {
      await queue.store.take(shard, 1, ['g']);
      return (await queue.stats()).dead === 3;
    }, 'the batch buried after its last lease');
    expect((await queue.stats()).redelivered).toBe(3);
  });
});
