import type { FixedQueueOptions } from 'nestjs-redis-queues';
import { shardOf } from '../../libs/queue/src/redis/keys';
import { recordBatches, useQueueApps } from '@test/support/fixtures';
import { pollUntil, uniquePrefix } from '@test/support/testing';
import { useWorkerProcesses } from '@test/support/worker-processes';

interface Message {
  n: number;
}

/** A batch start as the worker process logs it (test/faults/groups-worker.js). */
interface Start {
  group: string;
  attempt: number;
  pid: number;
  claimedAt: number;
  ns: number[];
}

const SHARDS = 2;

/** Another group in the shard of `group`: a claim lists the due groups of a shard in due order. */
function besides(group: string, label: string): string {
  for (let i = 0; ; i++) if (shardOf(`${label}${i}`, SHARDS) === shardOf(group, SHARDS)) return `${label}${i}`;
}

/**
 * The per-group controls hold for every process, not only the one that set them: here a second OS process
 * (a worker on a build of the library of its own) consumes the same queue as this one. Consumers sleep up
 * to idlePollMs (a minute) when nothing is due, so what they take promptly they were woken for.
 */
describe('FixedQueue per-group controls across processes', () => {
  const workers = useWorkerProcesses();
  const harness = useQueueApps();
  const batches = recordBatches<Message>('events', { concurrency: 4 });

  async function setUp(options: Partial<FixedQueueOptions>) {
    const prefix = uniquePrefix('groups');
    const queueOptions = { name: 'events', shards: SHARDS, maxWaitMs: 0, ...options };
    const [logKey, downKey] = [`${prefix}:test-log`, `${prefix}:test-down`];
    const producer = await harness.start({ prefix, root: { consumers: false }, fixed: [queueOptions] });
    const spawnWorker = () =>
      workers.spawn(
        'groups-worker.js',
        workers.env({ PREFIX: prefix, LOG_KEY: logKey, DOWN_KEY: downKey, OPTIONS: JSON.stringify(queueOptions) }),
      );
    const consumeHere = () => harness.start({ prefix, fixed: [queueOptions], providers: [batches.consumer] });
    const startsThere = async (): Promise<Start[]> =>
      (await harness.redis.lrange(logKey, 0, -1)).map((line) => {
        const [group, attempt, pid, claimedAt, ns] = line.split('|');
        return { group, attempt: +attempt, pid: +pid, claimedAt: +claimedAt, ns: ns.split(',').map(Number) };
      });
    return { downKey, queue: producer.fixed<Message>('events'), spawnWorker, consumeHere, startsThere };
  }

  const here = (group: string) => batches.batches.filter((batch) => batch.group === group);

  it('holds a paused group back from the consumers of both processes, and resumeGroup here wakes the other at once', async () => {
    const { queue, spawnWorker, consumeHere, startsThere } = await setUp({ batchSize: 5, delivery: 'at-least-once' });
    const worker = await spawnWorker();
    const consumer = await consumeHere();
    expect(await queue.pauseGroup('held')).toBe(true);
    await queue.pushMany('held', [{ n: 0 }, { n: 1 }, { n: 2 }]);

    // Groups pushed after it, half of them in its shard, until both processes have taken some: each of
    // them claimed past the paused group.
    let round = 0;
    await pollUntil(
      async () => {
        const groups = Array.from({ length: 20 }, (_, i) => `filler${round}-${i}`);
        round++;
        for (const group of groups) await queue.push(group, { n: 1 });
        await pollUntil(
          async () => (await queue.stats()).delivered === round * groups.length,
          'the filler groups delivered',
        );
        const there = (await startsThere()).filter((start) => start.group.startsWith('filler'));
        return there.length > 0 && batches.batches.length > 0;
      },
      'both processes to deliver filler groups',
      30_000,
    );
    expect(here('held')).toEqual([]);
    expect((await startsThere()).filter((start) => start.group === 'held')).toEqual([]);
    expect(await queue.stats()).toMatchObject({ pausedGroups: 1, pending: 3, active: 0 });

    // Only the worker consumes now, asleep with nothing due: the resume here must wake it.
    await harness.close(consumer.app);
    const resumedAt = Date.now();
    expect(await queue.resumeGroup('held')).toBe(true);
    const held = await pollUntil(
      async () => (await startsThere()).find((start) => start.group === 'held'),
      'the worker to deliver the resumed group',
      5_000,
    );
    expect(held).toMatchObject({ attempt: 1, pid: worker.pid, ns: [0, 1, 2] });
    process.stdout.write(`resumed here, delivered by the other process ${Date.now() - resumedAt} ms after\n`);
  });

  describe.each<[string, Partial<FixedQueueOptions>]>([
    ['ordered', { delivery: 'at-least-once' }],
    ['unordered', { ordered: false }],
  ])('groupRateLimit (%s)', (_, mode) => {
    it("counts the group's batch starts in every process against one window", async () => {
      const rate = { max: 2, durationMs: 3000 };
      const { queue, spawnWorker, consumeHere, startsThere } = await setUp({
        ...mode,
        batchSize: 1,
        groupRateLimit: rate,
      });
      // The worker alone takes the window's two starts...
      const worker = await spawnWorker();
      await queue.pushMany('hot', [{ n: 0 }, { n: 1 }]);
      const there = await pollUntil(async () => {
        const starts = await startsThere();
        return starts.length === 2 ? starts : undefined;
      }, "the worker's two batches");
      await pollUntil(async () => (await queue.stats()).delivered === 2, 'both acknowledged');
      await workers.stop(worker);

      // ...so this process, which started none, must wait for that window to end.
      await consumeHere();
      await queue.pushMany('hot', [{ n: 2 }, { n: 3 }]);
      await pollUntil(() => here('hot').length === 2, 'two batches here', 15_000);
      const starts = [...there.map((start) => start.claimedAt), ...here('hot').map((batch) => batch.ctx.claimedAt)];
      expect(starts).toEqual([...starts].sort((a, b) => a - b));
      // At most max starts in any durationMs, whichever process made them.
      for (let i = 0; i + rate.max < starts.length; i++)
        expect(starts[i + rate.max] - starts[i]).toBeGreaterThanOrEqual(rate.durationMs);
      expect([
        ...there.flatMap((start) => start.ns),
        ...here('hot').flatMap((batch) => batch.messages.map(({ n }) => n)),
      ]).toEqual([0, 1, 2, 3]);
    });
  });

  it("holds a group that exhausted its attempts in another process: this one's consumers leave it until resumeGroup", async () => {
    const { downKey, queue, spawnWorker, consumeHere, startsThere } = await setUp({
      delivery: 'at-least-once',
      maxAttempts: 2,
      backoff: { type: 'exponential', delayMs: 0 },
      onExhausted: 'pause-group',
    });
    await harness.redis.sadd(downKey, 'down');
    const worker = await spawnWorker();
    await queue.pushMany('down', [{ n: 0 }, { n: 1 }, { n: 2 }]);
    await pollUntil(async () => (await queue.pausedGroups()).items.length === 1, 'the worker to pause the group');
    expect((await queue.pausedGroups()).items).toEqual([
      { group: 'down', pausedAt: expect.any(Number), reason: 'exhausted' },
    ]);
    expect((await startsThere()).map(({ group, attempt, ns }) => [group, attempt, ns])).toEqual([
      ['down', 1, [0, 1, 2]],
      ['down', 2, [0, 1, 2]],
    ]);
    await workers.stop(worker);

    // This process consumes alone now: it claims past the held group, which a later push leaves held.
    await consumeHere();
    await queue.push('down', { n: 3 });
    const late = besides('down', 'late');
    await queue.push(late, { n: 100 });
    await pollUntil(() => here(late).length === 1, 'a group due after it to be delivered here');
    expect(here('down')).toEqual([]);
    expect(await queue.stats()).toMatchObject({ pausedGroups: 1, pending: 4, dead: 0 });

    await harness.redis.srem(downKey, 'down');
    expect(await queue.resumeGroup('down')).toBe(true);
    await pollUntil(() => here('down').flatMap((batch) => batch.messages).length === 4, "the group's batches here");
    expect(here('down').map((batch) => [batch.ctx.attempt, batch.messages.map(({ n }) => n)])).toEqual([
      [1, [0, 1, 2]],
      [1, [3]],
    ]);
  });
});
