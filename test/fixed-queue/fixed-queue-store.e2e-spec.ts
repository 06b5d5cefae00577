import { FixedQueueStore } from '../../libs/queue/src/fixed-queue/fixed-queue.store';
import { FIXED_QUEUE_DEFAULTS } from '../../libs/queue/src/queue.defaults';
import { QueueKeys } from '../../libs/queue/src/redis/keys';
import { GROUPS_PER_POLL } from '../../libs/queue/src/fixed-queue/poll-budget';
import { Scripts } from '../../libs/queue/src/redis/scripts';
import type { FixedQueueOptionsRules } from '../../libs/queue/src/validation/fixed-queue-options';
import { useQueueApps } from '@test/support/fixtures';
import { rawClient } from '@test/support/testing';

/** The store's bounds on one call, whatever the caller asks for (real redis-server). */
describe('FixedQueueStore: bounded calls', () => {
  const harness = useQueueApps({ client: rawClient });

  function store(options: Record<string, unknown>) {
    const rules = { ...FIXED_QUEUE_DEFAULTS, shards: 1, maxWaitMs: 0, ...options };
    return new FixedQueueStore(
      new Scripts(harness.redis),
      new QueueKeys(harness.prefix(), 'q', 1),
      rules as FixedQueueOptionsRules,
    );
  }

  async function fill(queue: FixedQueueStore, groups: number, perGroup: number) {
    for (let from = 0; from < groups; from += 500) {
      const page = Array.from({ length: Math.min(500, groups - from) }, (_, i) => ({
        group: `g${from + i}`,
        messages: Array.from({ length: perGroup }, (_, n) => `{"n":${n}}`),
      }));
      await queue.push(0, page);
    }
  }

  it('claims a few dozen groups per call however many slots are free, and leaves the shard due for the rest', async () => {
    const queue = store({ delivery: 'at-least-once', batchSize: 2 });
    await fill(queue, 100, 2);
    const listed = (await queue.take(0, 10_000, [])).due;
    const first = await queue.take(0, 10_000, listed);
    expect(first.batches).toHaveLength(GROUPS_PER_POLL);
    expect(first.nextDueAt).toBe(first.serverNow);
    expect(first.due.length).toBeLessThanOrEqual(GROUPS_PER_POLL);
    const groups = new Set(first.batches.map(({ group }) => group));
    let due = first.due;
    for (let polls = 0; groups.size < 100 && polls < 10; polls++) {
      const next = await queue.take(0, 10_000, due);
      due = next.due;
      for (const { group } of next.batches) groups.add(group);
    }
    expect(groups.size).toBe(100);
  });

  it('acknowledges deliveries over several calls, answering each in order, a stale one with null', async () => {
    const queue = store({ delivery: 'at-least-once', batchSize: 1000, capacity: 1000 });
    await fill(queue, 10, 1000);
    const deliveries: { group: string; token: string }[] = [];
    for (let due: string[] = [], polls = 0; deliveries.length < 10 && polls < 30; polls++) {
      const outcome = await queue.take(0, 100, due);
      due = outcome.due;
      for (const { group, token } of outcome.batches) deliveries.push({ group, token: token! });
    }
    expect(deliveries).toHaveLength(10);
    // Four deliveries of a thousand entries a call at most: three calls here.
    const stale = { group: deliveries[5].group, token: `${deliveries[5].token}-stale` };
    const acked = await queue.ack(0, [...deliveries.slice(0, 5), stale, ...deliveries.slice(5)]);
    expect(acked.dueAt).toEqual([-1, -1, -1, -1, -1, null, -1, -1, -1, -1, -1]);
    expect(acked.wakeAt).toBe(-1);
    expect(await queue.size(0, deliveries[9].group)).toBe(0);
  });
});
