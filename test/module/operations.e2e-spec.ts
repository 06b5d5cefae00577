import { type DeadTask, QueueInputError } from 'nestjs-redis-queues';
import { recordBatches, recordTasks, useQueueApps } from '@test/support/fixtures';
import { expectErrors, expectedErrors } from '@test/support/logs';
import { deferred, pollUntil } from '@test/support/testing';

const tasks = recordTasks<{ n: number }>('jobs', { concurrency: 64 });
const batches = recordBatches<{ n: number }>('events', { concurrency: 8 });

const DEAD_TASK = /task failed its last attempt and is dead-lettered/;
const DEAD_BATCH = /batch failed its last attempt and is dead-lettered/;

/** Every page of a listing, until its cursor runs out. */
async function allPages<T>(page: (cursor?: string) => Promise<{ items: T[]; cursor: string | null }>, limit: number) {
  const pages: T[][] = [];
  let cursor: string | undefined;
  for (;;) {
    const next = await page(cursor);
    expect(next.items.length).toBeLessThanOrEqual(limit);
    pages.push(next.items);
    if (next.cursor === null) return pages;
    cursor = next.cursor;
  }
}

describe('operating queues: inspect, page through, clean up', () => {
  const harness = useQueueApps();
  const start = (providers: unknown[]) =>
    harness.start({
      root: { idlePollMs: 200 },
      fixed: [
        {
          name: 'events',
          shards: 4,
          maxWaitMs: 10,
          batchSize: 10,
          delivery: 'at-least-once',
          maxAttempts: 1,
        },
      ],
      delay: [{ name: 'jobs', shards: 4, maxAttempts: 1, deadLetter: { capacity: 20_000 } }],
      providers: providers as never,
    });

  it('pages through 10,000 dead tasks 500 at a time, each exactly once, newest first; then deletes them in chunks', async () => {
    expectErrors(DEAD_TASK);
    tasks.behaviour = () => {
      throw new Error('upstream down');
    };
    const { delay } = await start([tasks.consumer]);
    const jobs = delay<{ n: number }>('jobs');
    for (let from = 0; from < 10_000; from += 1000)
      await Promise.all(
        Array.from({ length: 1000 }, (_, i) => jobs.schedule({ n: from + i }, { id: `job-${from + i}` })),
      );
    await pollUntil(async () => (await jobs.stats()).dead === 10_000, '10,000 dead tasks', 60_000, 100);
    await pollUntil(() => expectedErrors().length === 10_000, 'a line for each dead task');

    const pages = await allPages((cursor) => jobs.deadLetters({ cursor, limit: 500 }), 500);
    const listed = pages.flat() as DeadTask<{ n: number }>[];
    expect(listed).toHaveLength(10_000);
    expect(new Set(listed.map((task) => task.id)).size).toBe(10_000);
    expect(pages.slice(0, -1).every((page) => page.length === 500)).toBe(true);
    const died = listed.map((task) => task.diedAt);
    expect(died).toEqual([...died].sort((a, b) => b - a));
    expect(listed[0]).toMatchObject({
      state: 'dead',
      attempts: 1,
      lastError: expect.stringContaining('upstream down'),
    });
    expect(listed.find((task) => task.id === 'job-42')!.payload).toEqual({ n: 42 });
    // list('dead') is the same listing.
    const first = await jobs.list('dead', { limit: 500 });
    expect(first.items.map((task) => task.id)).toEqual(pages[0].map((task) => task.id));
    // The old form still reads the newest.
    expect((await jobs.deadLetters(3)).map((task) => task.id)).toEqual(listed.slice(0, 3).map((task) => task.id));

    expect(await jobs.deleteDead({ olderThan: 3_600_000 })).toBe(0);
    expect(await jobs.deleteDead()).toBe(10_000);
    expect((await jobs.stats()).dead).toBe(0);
    expect(await jobs.get('job-42')).toBeNull();
    await expect(jobs.deleteDead({ olderThan: -1 })).rejects.toThrow(QueueInputError);
  });

  it('re-queues every dead task at once, attempts reset, and consumers run them', async () => {
    expectErrors(DEAD_TASK);
    let failing = true;
    tasks.behaviour = () => {
      if (failing) throw new Error('not yet');
    };
    const { delay } = await start([tasks.consumer]);
    const jobs = delay<{ n: number }>('jobs');
    await Promise.all(Array.from({ length: 40 }, (_, n) => jobs.schedule({ n }, { id: `r${n}` })));
    await pollUntil(async () => (await jobs.stats()).dead === 40, '40 dead tasks');
    await pollUntil(() => expectedErrors().length === 40, 'a line for each dead task');
    failing = false;
    expect(await jobs.requeueAll()).toBe(40);
    await pollUntil(async () => (await jobs.stats()).completed === 40, 'the re-queued tasks to complete');
    expect(tasks.tasks.filter((task) => task.ctx.attempt === 1)).toHaveLength(80);
    expect((await jobs.list('dead')).items).toEqual([]);
  });

  it('lists scheduled tasks by run time and active ones by lease end, with payloads and attempts', async () => {
    const release = deferred();
    tasks.behaviour = () => release.promise;
    const { delay } = await start([tasks.consumer]);
    const jobs = delay<{ n: number }>('jobs');
    await Promise.all(
      Array.from({ length: 25 }, (_, n) => jobs.schedule({ n }, { id: `later-${n}`, delayMs: 60_000 + n * 1000 })),
    );
    await jobs.schedule({ n: -1 }, { id: 'now' });
    await tasks.untilTasks(1);

    const scheduled = await allPages((cursor) => jobs.list('scheduled', { cursor, limit: 10 }), 10);
    expect(scheduled.map((page) => page.length)).toEqual([10, 10, 5]);
    expect(scheduled.flat().map((task) => task.id)).toEqual(Array.from({ length: 25 }, (_, n) => `later-${n}`));
    expect(scheduled[0][3]).toMatchObject({ state: 'scheduled', attempts: 0, payload: { n: 3 } });
    const active = await jobs.list('active');
    expect(active.cursor).toBeNull();
    expect(active.items).toEqual([
      {
        id: 'now',
        state: 'active',
        runAt: expect.any(Number),
        attempts: 1,
        payload: { n: -1 },
        leaseEndsAt: expect.any(Number),
      },
    ]);
    expect(active.items[0].leaseEndsAt! - active.items[0].runAt).toBeGreaterThanOrEqual(29_000);
    release.resolve();
    await expect(jobs.list('running' as never)).rejects.toThrow(QueueInputError);
    await expect(jobs.list('dead', { cursor: 'garbage' })).rejects.toThrow(/not one this queue returned/);
  });

  it("FixedQueue: peeks at a group's head with push times, pages through its groups and its dead batches", async () => {
    const { fixed } = await start([]);
    const events = fixed<{ n: number }>('events');
    await events.pushMany('device-1', [{ n: 1 }, { n: 2 }, { n: 3 }]);
    const head = await events.peek('device-1', 2);
    expect(head.map((entry) => entry.message)).toEqual([{ n: 1 }, { n: 2 }]);
    expect(head[0].pushedAt).toBeGreaterThan(Date.now() - 60_000);
    expect(await events.peek('nobody')).toEqual([]);

    await Promise.all(Array.from({ length: 1200 }, (_, i) => events.push(`g${i}`, { n: i })));
    const pages = await allPages((cursor) => events.groups({ cursor, limit: 100 }), 100);
    const groups = pages.flat();
    expect(groups).toHaveLength(1201);
    expect(new Set(groups.map((group) => group.group)).size).toBe(1201);
    expect(groups.find((group) => group.group === 'device-1')!.size).toBe(3);
    await expect(events.groups({ cursor: 'x' })).rejects.toThrow(QueueInputError);
  });

  it('FixedQueue: pages through dead batches newest first, each once', async () => {
    expectErrors(DEAD_BATCH);
    batches.behaviour = () => {
      throw new Error('refused');
    };
    const { fixed } = await start([batches.consumer]);
    const events = fixed<{ n: number }>('events');
    await Promise.all(Array.from({ length: 60 }, (_, i) => events.push(`g${i}`, { n: i })));
    await pollUntil(async () => (await events.stats()).dead === 60, '60 dead messages');
    await pollUntil(() => expectedErrors().length === 60, 'a line for each dead batch');
    const pages = await allPages((cursor) => events.deadLetters({ cursor, limit: 7 }), 7);
    const listed = pages.flat();
    expect(new Set(listed.map((batch) => batch.id)).size).toBe(60);
    expect(listed.flatMap((batch) => batch.messages.map((message) => message.n)).sort((a, b) => a - b)).toEqual(
      Array.from({ length: 60 }, (_, i) => i),
    );
    const died = listed.map((batch) => batch.diedAt);
    expect(died).toEqual([...died].sort((a, b) => b - a));
  });
});
