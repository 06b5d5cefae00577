import 'reflect-metadata';
import { FixedQueueStore } from '../../libs/queue/src/fixed-queue/fixed-queue.store';
import { QueueKeys } from '../../libs/queue/src/redis/keys';
import { Scripts } from '../../libs/queue/src/redis/scripts';
import { resolveOptions } from '../../libs/queue/src/validation/apply-rules';
import { FixedQueueOptionsRules } from '../../libs/queue/src/validation/fixed-queue-options';
import { recordBatches, useQueueApps } from '@test/support/fixtures';
import { rawClient, uniquePrefix } from '@test/support/testing';

/** An acknowledgement that asks for it hands the group's next batch to the slot that freed (fixed-ack). */
describe('fixed-ack hands over the next batch', () => {
  const redis = rawClient();
  afterAll(() => redis.disconnect());

  function store(options: Record<string, unknown>) {
    const resolved = resolveOptions(
      FixedQueueOptionsRules,
      { name: 'q', shards: 1, batchSize: 2, maxWaitMs: 0, ...options },
      'test',
    );
    return new FixedQueueStore(new Scripts(redis), new QueueKeys(uniquePrefix(), 'q', 1), resolved);
  }

  async function claimOne(queue: FixedQueueStore, group: string) {
    const { due } = await queue.take(0, 1, []);
    const [claimed] = (await queue.take(0, 1, due)).batches;
    expect(claimed.group).toBe(group);
    return claimed;
  }

  it.each(['at-most-once', 'at-least-once'] as const)(
    '%s: the next batch comes with the acknowledgement, under a new token that holds the group; the old token is stale',
    async (delivery) => {
      const queue = store({ delivery });
      await queue.push(0, [{ group: 'g', messages: ['1', '2', '3', '4', '5'].map((n) => `{"n":${n}}`) }]);
      const first = await claimOne(queue, 'g');
      expect(first.messages).toEqual([{ n: 1 }, { n: 2 }]);

      const acked = await queue.ack(0, [{ group: 'g', token: first.token!, next: true }]);
      const next = acked.next[0]!;
      expect(next).toMatchObject({ group: 'g', attempt: 1, messages: [{ n: 3 }, { n: 4 }] });
      expect(next.token).not.toBe(first.token);
      // Held by the new token: a poll gives nothing of the group, a late acknowledgement is stale.
      expect((await queue.take(0, 5, ['g'])).batches).toEqual([]);
      expect((await queue.ack(0, [{ group: 'g', token: first.token! }])).dueAt).toEqual([null]);

      const last = (await queue.ack(0, [{ group: 'g', token: next.token!, next: true }])).next[0]!;
      expect(last.messages).toEqual([{ n: 5 }]);
      expect(await queue.ack(0, [{ group: 'g', token: last.token!, next: true }])).toMatchObject({
        dueAt: [-1],
        next: [undefined],
      });
      expect(await queue.stats()).toMatchObject({ pending: 0, delivered: 5, groups: 0 });
    },
  );

  it('hands nothing over on a paused queue, or without being asked: the group is ready again', async () => {
    const queue = store({ delivery: 'at-least-once' });
    await queue.push(0, [{ group: 'g', messages: ['1', '2', '3'] }]);
    const first = await claimOne(queue, 'g');
    await redis.hset(queue.keys.key(0, 'stats'), 'paused', '1');
    const paused = await queue.ack(0, [{ group: 'g', token: first.token!, next: true }]);
    expect(paused.next).toEqual([undefined]);
    expect(paused.dueAt[0]).toBeGreaterThan(0);
    await redis.hdel(queue.keys.key(0, 'stats'), 'paused');
    const second = await claimOne(queue, 'g');
    expect(second.messages).toEqual([3]);
    expect((await queue.ack(0, [{ group: 'g', token: second.token! }])).next).toEqual([undefined]);
  });
});

describe('a slot going on with its group', () => {
  const harness = useQueueApps();
  const order: string[] = [];
  const recorder = recordBatches<{ n: number }>('events', {}, (_messages, ctx) => void order.push(ctx.group));

  it('lets another group in after at most 16 batches in a row (concurrency 1)', async () => {
    order.length = 0;
    const { fixed } = await harness.start({
      fixed: [{ name: 'events', shards: 1, batchSize: 1, maxWaitMs: 0, capacity: 100 }],
      providers: [recorder.consumer],
    });
    await fixed('events').pushMany(
      'hot',
      Array.from({ length: 60 }, (_, n) => ({ n })),
    );
    await recorder.untilMessages(1);
    await fixed('events').push('cold', { n: 0 });
    await recorder.untilMessages(61);
    expect(order.indexOf('cold')).toBeLessThanOrEqual(1 + 16);
    expect(order.filter((group) => group === 'hot')).toHaveLength(60);
  });
});
