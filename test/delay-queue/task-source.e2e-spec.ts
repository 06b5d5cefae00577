import { Injectable, type INestApplication } from '@nestjs/common';
import { Registry } from 'prom-client';
import {
  QueueClock,
  QueueConfigError,
  QueueEvents,
  QueueInputError,
  QueueMetricsModule,
  type QueueReconciledEvent,
  type SourcedTask,
  TaskSource,
} from 'nestjs-redis-queues';
import { HOUR, Meal } from '@test/support/meals';
import { CapturedLogs } from '@test/support/faults';
import { recordTasks, useQueueApps } from '@test/support/fixtures';
import { afterTime, deferred, pollUntil, uniquePrefix } from '@test/support/testing';

let rows: unknown[] = [];
let listed = 0;
/** What the application does once the source has yielded its rows, while the pass still runs. */
let during: (() => Promise<void>) | undefined;

@Injectable()
class Meals {
  @TaskSource('meals')
  async *meals() {
    listed += 1;
    for (const row of rows) yield row as SourcedTask<Meal>;
    await during?.();
  }
}

@Injectable()
class OtherMeals {
  @TaskSource('meals')
  *meals() {}
}

/** Holds the handler, so that a task stays running; opened after each test. */
let gate = deferred();
const eater = recordTasks<Meal>('meals', { concurrency: 4 }, () => gate.promise);

describe('DelayQueue task source: reconcile()', () => {
  const harness = useQueueApps();

  afterEach(() => {
    rows = [];
    listed = 0;
    during = undefined;
    gate.resolve();
    gate = deferred();
  });

  async function start(
    options: { reconcile?: object; providers?: unknown[]; logger?: CapturedLogs; registry?: Registry } = {},
  ) {
    const { app, delay } = await harness.start({
      prefix: uniquePrefix('src'),
      root: { idlePollMs: 200 },
      delay: [
        {
          name: 'meals',
          shards: 4,
          leaseMs: 30_000,
          schema: Meal,
          ...(options.reconcile && { reconcile: options.reconcile }),
        },
      ],
      providers: (options.providers ?? [Meals]) as never[],
      imports: options.registry ? [QueueMetricsModule.register({ registry: options.registry })] : [],
      logger: options.logger,
    });
    const queue = delay<Meal>('meals');
    // The start-up pass of a queue whose record this app created.
    await pollUntil(async () => (await queue.record.state()).lastPass, 'the start-up pass');
    return { app, queue };
  }

  it("restores missing tasks and keeps the others as they are ('keep', the default), in any state", async () => {
    const registry = new Registry();
    const { app, queue } = await start({ providers: [Meals, eater.consumer], registry });
    await queue.schedule({ grams: 1 }, { id: 'running', delayMs: 0 });
    await eater.untilTasks(1);
    await queue.schedule({ grams: 2 }, { id: 'later', delayMs: 2 * HOUR });
    const events: QueueReconciledEvent[] = [];
    app.get(QueueEvents).on('queue.reconciled', (event) => events.push(event));
    rows = [
      { id: 'running', delayMs: HOUR, payload: { grams: 10 } },
      { id: 'later', delayMs: HOUR, payload: { grams: 20 } },
      ...Array.from({ length: 1200 }, (_, i) => ({ id: `new:${i}`, runAt: Date.now() + HOUR, payload: { grams: i } })),
    ];
    const result = await queue.reconcile();
    expect(result).toMatchObject({ listed: 1202, restored: 1200, kept: 2, swept: 0, invalid: 0 });
    expect(result.durationMs).toEqual(expect.any(Number));
    expect(await queue.get('running')).toMatchObject({ state: 'active', payload: { grams: 1 } });
    const later = await queue.get('later');
    expect(later).toMatchObject({ state: 'scheduled', payload: { grams: 2 } });
    expect(later!.runAt).toBeGreaterThan(Date.now() + 1.5 * HOUR);
    expect(await queue.get('new:1199')).toMatchObject({ state: 'scheduled', payload: { grams: 1199 } });
    expect(events).toEqual([expect.objectContaining({ queue: 'meals', trigger: 'call', restored: 1200, kept: 2 })]);
    const metric = await registry.getSingleMetric('nrq_tasks_restored_total')!.get();
    expect(metric.values.find((value) => value.labels.queue === 'meals')?.value).toBe(1200);
    const { lastPass } = await queue.record.state();
    expect(lastPass).toMatchObject({ trigger: 'call', listed: 1202, restored: 1200 });
    gate.resolve();
  });

  it("writes listed tasks over existing ones with onExists 'replace', 'earlier' and 'later'", async () => {
    const { queue } = await start({ reconcile: { onExists: 'later' } });
    const base = Date.now() + HOUR;
    for (const id of ['a', 'b']) await queue.schedule({ grams: 0 }, { id, runAt: base });
    rows = [
      { id: 'a', runAt: base + 60_000, payload: { grams: 1 } },
      { id: 'b', runAt: base - 60_000, payload: { grams: 1 } },
    ];
    // The queue's default: 'later'.
    expect(await queue.reconcile()).toMatchObject({ restored: 1, kept: 1 });
    expect(await queue.get('a')).toMatchObject({ runAt: base + 60_000, payload: { grams: 1 } });
    expect(await queue.get('b')).toMatchObject({ runAt: base, payload: { grams: 0 } });
    expect(await queue.reconcile({ onExists: 'earlier' })).toMatchObject({ restored: 1, kept: 1 });
    expect(await queue.get('b')).toMatchObject({ runAt: base - 60_000 });
    rows = [{ id: 'a', runAt: base, payload: { grams: 5 } }];
    expect(await queue.reconcile({ onExists: 'replace' })).toMatchObject({ restored: 1, kept: 0 });
    expect(await queue.get('a')).toMatchObject({ runAt: base, payload: { grams: 5 } });
  });

  it('sweeps the scheduled tasks the pass did not list, never a running one or a repeat', async () => {
    const { queue } = await start({ providers: [Meals, eater.consumer] });
    await queue.schedule({ grams: 1 }, { id: 'running', delayMs: 0 });
    await pollUntil(async () => (await queue.get('running'))?.state === 'active', 'a running task');
    await queue.repeat('daily', { everyMs: HOUR }, { grams: 3 });
    await Promise.all(
      Array.from({ length: 1500 }, (_, i) => queue.schedule({ grams: i }, { id: `stale:${i}`, delayMs: HOUR })),
    );
    rows = Array.from({ length: 700 }, (_, i) => ({ id: `stale:${i}`, delayMs: HOUR, payload: { grams: i } }));
    rows.push({ id: 'bad-time', runAt: 'not a date', payload: { grams: 1 } });
    await queue.schedule({ grams: 1 }, { id: 'bad-time', delayMs: HOUR });
    const result = await queue.reconcile({ sweep: true });
    expect(result).toMatchObject({ listed: 701, restored: 0, kept: 700, swept: 800, invalid: 1 });
    expect(await queue.get('stale:699')).toMatchObject({ state: 'scheduled' });
    expect(await queue.get('stale:700')).toBeNull();
    // A row refused for its time still names a task the records hold: not swept.
    expect(await queue.get('bad-time')).toMatchObject({ state: 'scheduled' });
    expect(await queue.get('running')).toMatchObject({ state: 'active' });
    expect((await queue.repeats()).items.map(({ id }) => id)).toEqual(['daily']);
    expect((await queue.stats()).scheduled).toBe(700 + 1 + 1);
    // Nothing is left marked: the next sweeping pass starts clean.
    expect(await queue.reconcile({ sweep: true })).toMatchObject({ swept: 0, kept: 700 });
    gate.resolve();
  });

  it('never sweeps a marked task cancelled and scheduled again during the pass', async () => {
    const { queue } = await start();
    await queue.schedule({ grams: 1 }, { id: 'marked', delayMs: HOUR });
    during = async () => {
      expect(await queue.cancel('marked')).toBe(true);
      await queue.schedule({ grams: 2 }, { id: 'marked', delayMs: 2 * HOUR });
    };
    expect(await queue.reconcile({ sweep: true })).toMatchObject({ listed: 0, swept: 0 });
    expect(await queue.get('marked')).toMatchObject({ state: 'scheduled', payload: { grams: 2 } });
  });

  it('never sweeps a marked task that fired, completed and was scheduled again during the pass', async () => {
    const { app, queue } = await start({ providers: [Meals, eater.consumer] });
    await queue.schedule({ grams: 1 }, { id: 'marked', delayMs: 1500 });
    during = async () => {
      gate.resolve();
      await afterTime(app.get(QueueClock), 1500, () => eater.tasks.length >= 1, 'the task fired');
      await pollUntil(async () => (await queue.get('marked')) === null, 'the task completed');
      await queue.schedule({ grams: 2 }, { id: 'marked', delayMs: HOUR });
    };
    expect(await queue.reconcile({ sweep: true })).toMatchObject({ listed: 0, swept: 0 });
    expect(await queue.get('marked')).toMatchObject({ state: 'scheduled', payload: { grams: 2 } });
  });

  it('never writes back a listed task cancelled during the pass', async () => {
    const { queue } = await start();
    await queue.schedule({ grams: 1 }, { id: 'listed', delayMs: HOUR });
    rows = [{ id: 'listed', delayMs: HOUR, payload: { grams: 1 } }];
    // The application's order: its database first, then the queue; the pass read the row before.
    during = async () => {
      rows = [];
      expect(await queue.cancel('listed')).toBe(true);
    };
    expect(await queue.reconcile()).toMatchObject({ listed: 1, restored: 0, kept: 1 });
    expect(await queue.get('listed')).toBeNull();
  });

  it('never writes again a listed task that fired and completed after the source read it', async () => {
    const { queue } = await start({ providers: [Meals, eater.consumer] });
    await queue.schedule({ grams: 1 }, { id: 'listed', delayMs: 0 });
    await eater.untilTasks(1);
    rows = [{ id: 'listed', delayMs: 0, payload: { grams: 1 } }];
    during = async () => {
      rows = [];
      gate.resolve();
      await pollUntil(async () => (await queue.get('listed')) === null, 'the task completed');
    };
    expect(await queue.reconcile()).toMatchObject({ listed: 1, restored: 0, kept: 1 });
    expect(await queue.get('listed')).toBeNull();
    expect((await queue.stats()).scheduled).toBe(0);
    expect(eater.ids()).toEqual(['listed']);
  });

  it('keeps its record of newer writes only while a pass runs, and a pass whose record expired writes nothing', async () => {
    const { queue } = await start();
    const passes = queue.store.keys.key(0, 'passes');
    let seen = 0;
    during = async () => {
      seen = await harness.redis.exists(passes);
    };
    await queue.reconcile();
    expect(seen).toBe(1);
    expect(await harness.redis.exists(passes)).toBe(0);
    await queue.schedule({ grams: 1 }, { id: 'outside', delayMs: HOUR });
    expect(await harness.redis.exists(passes)).toBe(0);
    // A pass whose process stopped renewing it: its record expired, and what it would write is refused.
    await queue.store.pass(0, { op: 'begin', pass: 'stalled', leaseMs: 30_000 });
    await harness.redis.del(passes);
    const item = { id: 'late', json: '{"grams":1}', time: ['in', HOUR] as ['in', number], onExists: 'keep' as const };
    await expect(queue.store.schedule(0, [item], 'stalled')).rejects.toThrow(/outlived its lease/);
    expect(await queue.get('late')).toBeNull();
  });

  it('counts and logs the rows it refuses, with their ids, and restores the rest', async () => {
    const logs = new CapturedLogs();
    const { queue } = await start({ logger: logs });
    rows = [
      { id: '', delayMs: HOUR, payload: { grams: 1 } },
      { id: 'nan', runAt: Number.NaN, payload: { grams: 1 } },
      { id: 'both', runAt: Date.now(), delayMs: 5, payload: { grams: 1 } },
      { id: 'schema', delayMs: HOUR, payload: { grams: -1 } },
      null,
      { id: 'fine', delayMs: HOUR, payload: { grams: 1 } },
    ];
    expect(await queue.reconcile()).toMatchObject({ listed: 6, restored: 1, invalid: 5 });
    expect(await queue.get('fine')).toMatchObject({ state: 'scheduled' });
    const warned = logs.find('warn', /Task source Meals\.meals: skipped task/);
    expect(warned).toHaveLength(5);
    expect(warned.join('\n')).toMatch(/skipped task "nan": runAt/);
    expect(warned.join('\n')).toMatch(/skipped task "schema": .*grams/);
    expect(warned.join('\n')).toMatch(/skipped task #1: id /);
  });

  it('runs every reconcile.everyMs once across two applications', async () => {
    const prefix = uniquePrefix('src');
    const passes: QueueReconciledEvent[] = [];
    const apps: INestApplication[] = [];
    for (let i = 0; i < 2; i++) {
      const { app } = await harness.start({
        prefix,
        root: { idlePollMs: 200 },
        delay: [{ name: 'meals', shards: 4, schema: Meal, reconcile: { everyMs: 1000 } }],
        providers: [Meals],
      });
      app.get(QueueEvents).on('queue.reconciled', (event) => passes.push(event));
      apps.push(app);
    }
    const scheduled = () => passes.filter((pass) => pass.trigger === 'schedule').length;
    // Passes while the second application started (slow on a Cluster) are not counted. The queues'
    // time: what the schedule follows, moved by the test on memory://.
    const clock = apps[1].get(QueueClock);
    const began = await clock.now();
    const before = scheduled();
    await afterTime(clock, 3000, () => scheduled() - before >= 3, 'three passes', 15_000);
    expect(scheduled() - before).toBeLessThanOrEqual(Math.ceil(((await clock.now()) - began) / 1000) + 1);
  });

  it('refuses bad reconcile options with the value received, and unknown keys with the nearest known', async () => {
    const refused = (reconcile: object) =>
      harness.start({ delay: [{ name: 'meals', reconcile: reconcile as never }], providers: [Meals] });
    await expect(refused({ everyMS: 1000 })).rejects.toThrow(/everyMS.*everyMs/);
    await expect(refused({ everyMs: 1000, cron: '* * * * *' })).rejects.toThrow(/everyMs or cron, not both/);
    await expect(refused({ everyMs: 10 })).rejects.toThrow(/everyMs.*10/);
    await expect(refused({ cron: 'every minute' })).rejects.toThrow(QueueConfigError);
    await expect(refused({ onExists: 'newest' })).rejects.toThrow(
      /onExists must be 'replace', 'keep', 'earlier' or 'later'/,
    );
    const { queue } = await start();
    await expect(queue.reconcile({ swep: true } as never)).rejects.toThrow(QueueInputError);
    await expect(queue.reconcile({ swep: true } as never)).rejects.toThrow(/swep.*sweep/);
    await expect(queue.reconcile({ sweep: 'yes' } as never)).rejects.toThrow(/sweep must be true or false.*yes/);
    expect(listed).toBe(1);
  });

  it('refuses a second task source of a queue at start-up, naming both', async () => {
    await expect(harness.start({ delay: [{ name: 'meals' }], providers: [Meals, OtherMeals] })).rejects.toThrow(
      /two task sources, (Meals\.meals and OtherMeals\.meals|OtherMeals\.meals and Meals\.meals)/,
    );
  });
});
