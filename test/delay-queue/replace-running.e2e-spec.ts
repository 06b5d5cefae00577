import { setTimeout as delay } from 'node:timers/promises';
import { recordTasks, useQueueApps, type QueueAppOptions } from '@test/support/fixtures';
import { deferred, pollUntil } from '@test/support/testing';

interface Payload {
  n: number;
}

/** Runs of each id under way, the most seen at once, and every run's payload as it started and ended. */
class Runs {
  private readonly running = new Map<string, number>();
  most = 0;
  readonly started: number[] = [];
  readonly ended: number[] = [];

  async around(id: string, n: number, work: () => Promise<void>): Promise<void> {
    const now = (this.running.get(id) ?? 0) + 1;
    this.running.set(id, now);
    this.most = Math.max(this.most, now);
    this.started.push(n);
    try {
      await work();
    } finally {
      this.running.set(id, (this.running.get(id) ?? 1) - 1);
      this.ended.push(n);
    }
  }

  reset(): void {
    this.running.clear();
    this.most = 0;
    this.started.length = 0;
    this.ended.length = 0;
  }
}
const runs = new Runs();
let work: (n: number) => Promise<void> = () => Promise.resolve();

const tasks = recordTasks<Payload>('tasks', { concurrency: 1 }, (payload, ctx) =>
  runs.around(ctx.id, payload.n, () => work(payload.n)),
);

describe('DelayQueue: a task scheduled again while it runs', () => {
  const harness = useQueueApps();
  const options = (prefix?: string): QueueAppOptions => ({
    prefix,
    // One shard: a claim takes its due tasks in due order.
    delay: [{ name: 'tasks', shards: 1 }],
    providers: [tasks.consumer],
  });

  afterEach(() => {
    runs.reset();
    work = () => Promise.resolve();
  });

  it('debounced faster than the handler: never two runs of the id at once, across two apps, and every run completes', async () => {
    // Two consumer slots, one per app: a second run of the id could start in the other.
    const first = await harness.start(options());
    await harness.start(options(first.prefix));
    const queue = first.delay<Payload>('tasks');
    work = () => delay(1_500);

    // A stream of events 100 ms apart for 2.25 s, debounced at 300 ms within 1 s.
    let n = 0;
    for (const end = Date.now() + 2_250; Date.now() < end; await delay(100))
      await queue.schedule({ n: ++n }, { id: 'digest', delayMs: 300, debounce: { maxWaitMs: 1_000 } });

    await pollUntil(
      async () => (await queue.stats()).scheduled === 0 && (await queue.get('digest')) === null,
      'the last version run',
      20_000,
    );
    expect(runs.most).toBe(1);
    // The first run came at the maximum wait; the version scheduled while it ran waited for it, and
    // ran with the latest payload.
    expect(runs.started.length).toBeGreaterThanOrEqual(2);
    expect(runs.started.at(-1)).toBe(n);
    expect(runs.ended).toEqual(runs.started);
    const stats = await queue.stats();
    expect(stats).toMatchObject({ fired: runs.started.length, completed: runs.started.length, deadTotal: 0 });
  });

  it("replaced while it runs: the new version waits for it, then runs at its time; each run's outcome counts", async () => {
    const started = await harness.start(options());
    await harness.start(options(started.prefix));
    const queue = started.delay<Payload>('tasks');
    const release = deferred();
    work = (n) => (n === 1 ? release.promise : Promise.resolve());
    await queue.schedule({ n: 1 }, { id: 'job' });
    await pollUntil(() => runs.started.length === 1, 'the first version running');

    const replaced = await queue.schedule({ n: 2 }, { id: 'job' });
    expect(replaced.changed).toBe(true);
    expect(await queue.get('job')).toMatchObject({ state: 'active', attempts: 1, payload: { n: 2 } });
    // Due before 'other', in the same shard: the free slot would have taken it first.
    await queue.schedule({ n: 100 }, { id: 'other' });
    await pollUntil(() => runs.ended.includes(100), 'a task due after it run in the free slot');
    expect(runs.started).toEqual([1, 100]);

    release.resolve();
    await pollUntil(() => runs.ended.length === 3, 'the new version run once the first settled');
    expect(runs.started).toEqual([1, 100, 2]);
    expect(runs.most).toBe(1);
    expect(tasks.tasks.map(({ ctx }) => ctx.attempt)).toEqual([1, 1, 1]);
    await pollUntil(async () => (await queue.get('job')) === null, 'the task done');
    expect(await queue.stats()).toMatchObject({ fired: 3, completed: 3, retried: 0 });
  });

  it('failing while replaced: the new version takes its place instead of a retry, from attempt 1', async () => {
    const started = await harness.start(options());
    const queue = started.delay<Payload>('tasks');
    const release = deferred();
    work = (n) =>
      n === 1 ? release.promise.then(() => Promise.reject(new Error('upstream down'))) : Promise.resolve();
    await queue.schedule({ n: 1 }, { id: 'job' });
    await pollUntil(() => runs.started.length === 1, 'the first version running');
    await queue.schedule({ n: 2 }, { id: 'job', delayMs: 200 });

    release.resolve();
    await pollUntil(() => runs.ended.length === 2, 'the new version run');
    expect(tasks.tasks.map(({ payload, ctx }) => [payload.n, ctx.attempt])).toEqual([
      [1, 1],
      [2, 1],
    ]);
    await pollUntil(async () => (await queue.get('job')) === null, 'the task done');
    expect(await queue.stats()).toMatchObject({ fired: 2, completed: 1, retried: 1, deadTotal: 0 });
  });

  it('cancelled while it runs with a successor: both go', async () => {
    const started = await harness.start(options());
    const queue = started.delay<Payload>('tasks');
    const release = deferred();
    work = () => release.promise;
    await queue.schedule({ n: 1 }, { id: 'job' });
    await pollUntil(() => runs.started.length === 1, 'the first version running');
    await queue.schedule({ n: 2 }, { id: 'job' });
    expect(await queue.cancel('job')).toBe(true);
    release.resolve();
    await pollUntil(() => runs.ended.length === 1, 'the running version settled');
    expect(await queue.get('job')).toBeNull();
    const keys = await harness.redis.keys(`${started.prefix}:*successors`);
    for (const key of keys) expect(await harness.redis.hlen(key)).toBe(0);
    expect(runs.started).toEqual([1]);
  });
});
