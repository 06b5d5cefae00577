import { Injectable, Module } from '@nestjs/common';
import { Registry } from 'prom-client';
import {
  type DelayQueue,
  QueueClock,
  QueueConfigError,
  QueueDashboardModule,
  QueueHealthIndicator,
  QueueInputError,
  QueueMetricsModule,
  Recurring,
  type RecurringContext,
  RecurringSchedules,
} from 'nestjs-redis-queues';
import { QueueRegistry } from '../../libs/queue/src/queue.registry';
import { useQueueApps } from '@test/support/fixtures';
import { expectErrors } from '@test/support/logs';
import { afterTime, keysMatching, pollUntil, uniquePrefix } from '@test/support/testing';

const runs: { app: number; ctx: RecurringContext }[] = [];
let failFirstAttempt = false;

function digestJob(app: number) {
  @Injectable()
  class Digest {
    @Recurring({ everyMs: 200, maxAttempts: 3, backoff: { type: 'fixed', delayMs: 10 } })
    async digest(ctx: RecurringContext) {
      runs.push({ app, ctx });
      if (failFirstAttempt && ctx.attempt === 1) throw new Error('first attempt fails');
    }
  }
  return Digest;
}

describe('@Recurring', () => {
  const harness = useQueueApps();
  afterEach(() => {
    runs.length = 0;
    failFirstAttempt = false;
  });

  const start = (prefix: string, app: number) => harness.start({ prefix, providers: [digestJob(app)] });

  it('runs each tick once across the processes that declare it, on multiples of everyMs', async () => {
    const prefix = uniquePrefix();
    const [first] = await Promise.all([start(prefix, 1), start(prefix, 2), start(prefix, 3)]);
    await afterTime(first.app.get(QueueClock), 12 * 200, () => runs.length >= 12, '12 runs', 10_000);
    const ticks = runs.map(({ ctx }) => ctx.occurrence);
    expect(new Set(ticks).size).toBe(ticks.length);
    const sorted = [...ticks].sort((a, b) => a - b);
    expect(sorted).toEqual(sorted.map((_, i) => sorted[0] + i * 200));
    for (const { ctx } of runs) {
      expect(ctx).toMatchObject({ name: 'Digest.digest', attempt: 1 });
      expect(ctx.firedAt).toBeGreaterThanOrEqual(ctx.occurrence);
      expect(ctx.signal).toBeInstanceOf(AbortSignal);
    }
    const queue = first.app.get(QueueRegistry).get<DelayQueue>('delay', 'recurring.Digest.digest');
    const { items } = await queue.repeats();
    expect(items).toEqual([expect.objectContaining({ id: 'Digest.digest', everyMs: 200, lastOutcome: 'completed' })]);
  });

  it('retries a failed run for the same tick', async () => {
    failFirstAttempt = true;
    expectErrors(/first attempt fails/);
    const { app } = await start(uniquePrefix(), 1);
    // Two ticks 200 ms apart, each retried 10 ms after its first attempt.
    await afterTime(app.get(QueueClock), 3 * 200, () => runs.length >= 4, '4 runs', 10_000);
    const [a, b, c, d] = runs.map(({ ctx }) => ctx);
    expect([a.attempt, b.attempt, c.attempt, d.attempt]).toEqual([1, 2, 1, 2]);
    expect(b.occurrence).toBe(a.occurrence);
    expect(c.occurrence).toBe(a.occurrence + 200);
  });

  it('lists the schedules with their last success (also as a gauge), and removes one whose method is gone', async () => {
    const prefix = uniquePrefix();
    const registry = new Registry();
    const first = await harness.start({
      prefix,
      providers: [digestJob(1)],
      imports: [QueueMetricsModule.register({ registry })],
    });
    await afterTime(first.app.get(QueueClock), 2 * 200, () => runs.length >= 2, '2 runs');
    const schedules = first.app.get(RecurringSchedules);
    const [listed] = await pollUntil(async () => {
      const all = await schedules.list();
      return all[0]?.lastSuccessAt !== undefined ? all : undefined;
    }, 'a success');
    expect(listed).toMatchObject({
      name: 'Digest.digest',
      declaredBy: 'Digest.digest',
      handled: true,
      everyMs: 200,
      missed: 'latest',
      lastOutcome: 'completed',
    });
    await expect(schedules.remove('Digest.digest')).rejects.toThrow(QueueInputError);
    const text = await registry.metrics();
    expect(text).toMatch(/nrq_recurring_last_success_timestamp_seconds\{schedule="Digest.digest",handled="true"\} \d+/);
    expect(text).toMatch(/nrq_recurring_next_run_timestamp_seconds\{schedule="Digest.digest",handled="true"\} \d+/);
    await harness.close(first.app);

    // The same app without the method: the schedule stays, shown as run by no one here, until removed.
    const second = await harness.start({ prefix });
    const others = second.app.get(RecurringSchedules);
    expect(await others.list()).toEqual([expect.objectContaining({ name: 'Digest.digest', handled: false })]);
    const health = await second.app.get(QueueHealthIndicator).isHealthy('queues');
    expect(health.queues.recurring).toEqual({
      'Digest.digest': expect.objectContaining({ handled: false, lastOutcome: 'completed' }),
    });
    expect(await others.remove('Digest.digest')).toBe(true);
    expect(await others.list()).toEqual([]);
    // Nothing of the schedule; the running process' announcement (QueueProcesses) alone.
    expect(await keysMatching(harness.redis, `${prefix}:*`)).toEqual([`${prefix}:{processes}:announced`]);
  });

  it('shows the schedules on the dashboard, with their next and last run, their queues folded into them', async () => {
    const { app } = await harness.start({
      providers: [digestJob(1)],
      fixed: [{ name: 'events' }],
      imports: [QueueDashboardModule.register()],
    });
    await afterTime(app.get(QueueClock), 2 * 200, () => runs.length >= 2, '2 runs');
    await app.listen(0, '127.0.0.1');
    const base = (await app.getUrl()).replace('[::1]', '127.0.0.1');
    const overview = async () =>
      (await (await fetch(`${base}/queues/api`)).json()) as {
        queues: { name: string }[];
        schedules: Record<string, unknown>[];
      };
    const shown = await overview();
    expect(shown.schedules).toEqual([
      expect.objectContaining({
        name: 'Digest.digest',
        handled: true,
        everyMs: 200,
        lastOutcome: 'completed',
        queue: {
          name: 'recurring.Digest.digest',
          paused: false,
          active: expect.any(Number),
          lagMs: expect.any(Number),
          overdue: 0,
        },
      }),
    ]);
    // The schedule's own queue is internal: no card of its own.
    expect(shown.queues.map(({ name }) => name)).toEqual(['events']);
    const page = await (await fetch(`${base}/queues`)).text();
    expect(page).toContain('data-schedule="Digest.digest"');
    expect(page).toContain('every 200 ms');
    expect(page).toMatch(/<td class="tight" data-schedule-queue>\d+ running · lag [^<]+<\/td>/);
    expect(page).not.toContain('data-queue="recurring.Digest.digest"');

    // Its row keeps the pause button its card had.
    const paused = await fetch(`${base}/queues/api/delay/recurring.Digest.digest/pause`, {
      method: 'POST',
      headers: { 'x-requested-with': 'nrq-dashboard' },
    });
    expect(paused.status).toBe(200);
    expect((await overview()).schedules[0].queue).toMatchObject({ paused: true });
    expect(await (await fetch(`${base}/queues`)).text()).toMatch(/data-schedule-queue>paused · \d+ running/);
  });

  it('refuses a schedule that means nothing at start-up', async () => {
    @Injectable()
    class Broken {
      @Recurring({ cron: 'every now and then' })
      async run() {}
    }
    await expect(harness.start({ providers: [Broken] })).rejects.toThrow(QueueConfigError);
    @Injectable()
    class Misspelt {
      @Recurring({ everyMs: 1000, mised: 'all' } as never)
      async run() {}
    }
    await expect(harness.start({ providers: [Misspelt] })).rejects.toThrow(/missed/);
  });
  it('takes its options from a factory given what inject lists, under the name written beside it', async () => {
    @Injectable()
    class Settings {
      readonly rollupEveryMs = 150;
    }
    @Module({ providers: [Settings], exports: [Settings] })
    class SettingsModule {}
    @Injectable()
    class Rollup {
      @Recurring({ name: 'rollup', inject: [Settings], useFactory: (s: Settings) => ({ everyMs: s.rollupEveryMs }) })
      async run(ctx: RecurringContext) {
        runs.push({ app: 1, ctx });
      }
    }
    const started = await harness.start({ imports: [SettingsModule], providers: [Rollup] });
    await afterTime(started.app.get(QueueClock), 2 * 150, () => runs.length >= 2, 'two runs');
    expect(runs[0].ctx.name).toBe('rollup');
    expect(runs[1].ctx.occurrence - runs[0].ctx.occurrence).toBe(150);
    const [schedule] = await started.app.get(RecurringSchedules).list();
    expect(schedule).toMatchObject({ name: 'rollup', everyMs: 150, declaredBy: 'Rollup.run' });
  });

  it.each([
    [
      'both cron and everyMs',
      { cron: '*/5 * * * * *', everyMs: 1000 },
      '@Recurring on Job.run: give either cron or everyMs, not both (got cron "*/5 * * * * *", a string and everyMs 1000)',
    ],
    [
      'a cron whose hour is a typo',
      { cron: '0 eve * * *' },
      '@Recurring on Job.run: cron "0 eve * * *": its hour field "eve" is not valid (0-23, with , - / and *)',
    ],
    [
      'an everyMs that is no number, in the words of the decorator',
      { everyMs: '1000' },
      '@Recurring on Job.run: everyMs must be an integer between 1 and 31622400000 (got "1000", a string)',
    ],
    [
      'no schedule',
      { tz: 'Europe/Paris' },
      "@Recurring on Job.run: give a schedule: { cron: '0 */5 * * * *' } or { everyMs: 60_000 }",
    ],
    [
      'a factory making both',
      { useFactory: () => ({ cron: '* * * * *', everyMs: 5 }) },
      '@Recurring on Job.run: give either cron or everyMs, not both',
    ],
    [
      'a factory making an unknown key',
      { useFactory: () => ({ everyMs: 5, mised: 'all' }) },
      '@Recurring on Job.run: mised is not an option (did you mean missed?)',
    ],
    [
      'retries beyond what its queue allows, in the words of the decorator',
      { everyMs: 5, maxAttempts: 0, backoff: { type: 'linear', delayMs: 1 } },
      '@Recurring on Job.run: maxAttempts must be an integer between 1 and 1000 (got 0); ' +
        'backoff.type must be one of the following values: fixed, exponential (got "linear", a string)',
    ],
    [
      'a backoff whose bound is below its delay',
      { everyMs: 5, backoff: { type: 'fixed', delayMs: 1000, maxDelayMs: 10 } },
      '@Recurring on Job.run: backoff.maxDelayMs must be ≥ backoff.delayMs (got 10 < 1000)',
    ],
    [
      'inject naming what no module provides',
      { inject: ['NOWHERE'], useFactory: () => ({ everyMs: 5 }) },
      '@Recurring on Job.run: inject lists NOWHERE, which no module of the application provides',
    ],
    [
      'inject without useFactory',
      { inject: ['NOWHERE'], everyMs: 5 },
      '@Recurring on Job.run: inject is given without useFactory',
    ],
  ])('refuses %s at start-up, writing nothing', async (_what, options, said) => {
    @Injectable()
    class Job {
      @Recurring(options as never)
      async run() {}
    }
    const prefix = uniquePrefix();
    const refused = harness.start({ prefix, providers: [Job] });
    await expect(refused).rejects.toThrow(QueueConfigError);
    await expect(refused).rejects.toThrow(said);
    expect(await keysMatching(harness.redis, `${prefix}:*`)).toEqual([]);
  });
});
