import type { BatchContext } from 'nestjs-redis-queues';
import { recordBatches, useQueueApps } from '@test/support/fixtures';
import { expectErrors } from '@test/support/logs';
import { pollUntil } from '@test/support/testing';

/** Consumers sleep this long when nothing is due: a re-queued batch must not wait for it. */
const IDLE_POLL_MS = 20_000;

/** Fails every batch of group "bad": with maxAttempts 1 each goes straight to the dead batches. */
const refuseBad = (_messages: unknown[], ctx: BatchContext) => {
  if (ctx.group === 'bad') throw new Error('refused');
};
const batches = recordBatches<{ n: number }>('readings', {}, refuseBad);

describe('FixedQueue.requeue wakes sleeping consumers (real redis-server)', () => {
  const harness = useQueueApps();

  it('delivers each re-queued batch as if pushed now, not after idlePollMs, time after time in one process', async () => {
    expectErrors(/batch failed its last attempt and is dead-lettered group="bad"/);
    const { fixed } = await harness.start({
      root: { idlePollMs: IDLE_POLL_MS },
      fixed: [{ name: 'readings', shards: 1, delivery: 'at-least-once', maxAttempts: 1, batchSize: 2, maxWaitMs: 10 }],
      providers: [batches.consumer],
    });
    const queue = fixed<{ n: number }>('readings');
    for (const n of [1, 2, 3]) {
      batches.behaviour = refuseBad;
      await queue.pushMany('bad', [{ n }, { n: n + 100 }]);
      const dead = await pollUntil(async () => (await queue.deadLetters()).at(0), `dead batch ${n}`);
      // The consumer has gone back to sleep: nothing else is due for idlePollMs.
      await pollUntil(async () => (await queue.stats()).pending === 0, `batch ${n} off the group`);
      batches.behaviour = () => undefined;
      const delivered = batches.messages().length;
      const requeuedAt = Date.now();
      expect(await queue.requeue(dead.id)).toEqual({ id: dead.id, dropped: 0 });
      await batches.untilMessages(delivered + 2, IDLE_POLL_MS / 4);
      expect(Date.now() - requeuedAt).toBeLessThan(IDLE_POLL_MS / 4);
      expect(batches.batches.at(-1)).toMatchObject({ group: 'bad', messages: [{ n }, { n: n + 100 }] });
    }
  });
});
