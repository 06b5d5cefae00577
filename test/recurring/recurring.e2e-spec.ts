import {
  QueueClock,
  QueueInputError,
  type DelayQueueOptions,
  type MissedTicks,
  type QueueConnection,
} from 'nestjs-redis-queues';
import { passTime } from 'nestjs-redis-queues/testing';
import { recordTasks, useQueueApps } from '@test/support/fixtures';
import { expectErrors } from '@test/support/logs';
import { afterTime, onMemory, pollUntil, uniquePrefix } from '@test/support/testing';

const digests = recordTasks<{ kind: string } | null>('digests', { concurrency: 4 });
const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/** The occurrences handled, in order, one per delivery. */
const occurrences = () => digests.tasks.map((task) => task.ctx.repeat!.occurrence);

describe('DelayQueue repeats', () => {
  const harness = useQueueApps();

  async function start(
    prefix: string,
    queue: Partial<DelayQueueOptions> = {},
    opts: { consumer?: boolean; connection?: QueueConnection } = {},
  ) {
    const { app, delay } = await harness.start({
      prefix,
      connection: opts.connection,
      root: { idlePollMs: 500 },
      delay: [{ name: 'digests', shards: 4, leaseMs: 1000, ...queue }],
      providers: opts.consumer === false ? [] : [digests.consumer],
    });
    return { app, queue: delay<{ kind: string } | null>('digests'), clock: app.get(QueueClock) };
  }

  it('runs each tick once, at multiples of everyMs, until unrepeated', async () => {
    const { queue, clock } = await start(uniquePrefix());
    const { id, nextRunAt } = await queue.repeat('digest', { everyMs: 200 }, { kind: 'daily' });
    expect(id).toBe('digest');
    expect(nextRunAt % 200).toBe(0);
    const fourth = nextRunAt + 3 * 200;
    await afterTime(clock, fourth - (await clock.now()), () => digests.tasks.length >= 4, '4 tasks of "digests"');
    const seen = occurrences().slice(0, 4);
    if (onMemory) {
      expect(seen).toEqual([0, 1, 2, 3].map((i) => nextRunAt + i * 200));
    } else {
      // On a server, a tick the consumer could not claim within everyMs (a machine that paused it) is
      // skipped for the latest (missed: 'latest'): later multiples of everyMs, each once.
      for (const [i, occurrence] of seen.entries()) {
        expect((occurrence - nextRunAt) % 200).toBe(0);
        expect(occurrence).toBeGreaterThan(i === 0 ? nextRunAt - 1 : seen[i - 1]);
      }
    }
    for (const task of digests.tasks.slice(0, 4)) {
      expect(task.id).toBe('digest');
      expect(task.payload).toEqual({ kind: 'daily' });
      expect(task.ctx.attempt).toBe(1);
      expect(task.ctx.firedAt).toBeGreaterThanOrEqual(task.ctx.repeat!.occurrence);
    }
    const { items, cursor } = await queue.repeats();
    expect(cursor).toBeNull();
    expect(items).toEqual([
      expect.objectContaining({ id: 'digest', everyMs: 200, missed: 'latest', lastOutcome: 'completed' }),
    ]);
    expect(items[0].nextRunAt).toBeGreaterThan(seen[3]);
    expect(items[0].lastRunAt).toBeGreaterThanOrEqual(seen[3]);
    expect(await queue.unrepeat('digest')).toBe(true);
    expect(await queue.unrepeat('digest')).toBe(false);
    const handled = digests.tasks.length;
    await passTime(clock, 500);
    expect(digests.tasks.length).toBeLessThanOrEqual(handled + 1);
    expect((await queue.repeats()).items).toEqual([]);
    expect(await queue.get('digest')).toBeNull();
  });

  it('leaves one pending occurrence when many declare the same repeat at once', async () => {
    const prefix = uniquePrefix();
    const apps = await Promise.all(Array.from({ length: 5 }, () => start(prefix, {}, { consumer: false })));
    const declared = await Promise.all(
      apps.flatMap(({ queue }) =>
        Array.from({ length: 4 }, () => queue.repeat('report', { cron: '0 0 3 * * *' }, null, { tz: 'Asia/Tokyo' })),
      ),
    );
    expect(new Set(declared.map((each) => each.nextRunAt)).size).toBe(1);
    const { queue } = apps[0];
    expect(await queue.stats()).toMatchObject({ scheduled: 1, scheduledTotal: 1 });
    expect((await queue.repeats()).items).toEqual([
      expect.objectContaining({
        id: 'report',
        cron: '0 0 3 * * *',
        tz: 'Asia/Tokyo',
        nextRunAt: declared[0].nextRunAt,
      }),
    ]);
    // 03:00 in Tokyo is 18:00 UTC.
    expect(new Date(declared[0].nextRunAt).toISOString()).toMatch(/T18:00:00\.000Z$/);
    const changed = await queue.repeat('report', { everyMs: 3600_000 });
    expect(changed.nextRunAt % 3600_000).toBe(0);
    expect(await queue.get('report')).toMatchObject({ state: 'scheduled', runAt: changed.nextRunAt });
    expect(await queue.stats()).toMatchObject({ scheduled: 1 });
    expect(await queue.cancel('report')).toBe(true);
    expect((await queue.repeats()).items).toEqual([]);
  });

  it('pages through repeats', async () => {
    const { queue } = await start(uniquePrefix(), {}, { consumer: false });
    for (let i = 0; i < 12; i++) await queue.repeat(`r${i}`, { everyMs: 3600_000 });
    const seen: string[] = [];
    let cursor: string | undefined;
    do {
      const page = await queue.repeats({ cursor, limit: 5 });
      seen.push(...page.items.map((item) => item.id));
      cursor = page.cursor ?? undefined;
    } while (cursor !== undefined);
    expect(seen.sort()).toEqual(Array.from({ length: 12 }, (_, i) => `r${i}`).sort());
  });

  it('never runs two occurrences at once, and follows a long run with the latest missed tick', async () => {
    let running = 0;
    let most = 0;
    digests.behaviour = async () => {
      running += 1;
      most = Math.max(most, running);
      await sleep(350);
      running -= 1;
    };
    // A run's length is real time, and the still clock of memory:// never moves while a handler runs:
    // there this test takes an instance of its own that follows the wall clock.
    const connection = onMemory ? 'memory://recurring-long-run?clock=system' : undefined;
    const { queue } = await start(uniquePrefix(), {}, { connection });
    await queue.repeat('slow', { everyMs: 100 });
    await digests.untilTasks(3, 5000);
    expect(most).toBe(1);
    const [first, second] = digests.tasks;
    // The run of `first` covered three more ticks: the latest of them runs, the others are skipped.
    expect(second.ctx.repeat!.occurrence - first.ctx.repeat!.occurrence).toBeGreaterThanOrEqual(300);
    expect(second.ctx.repeat!.occurrence % 100).toBe(0);
    await queue.unrepeat('slow');
  });

  it('retries a failing occurrence for the same tick, then goes on with the schedule', async () => {
    digests.behaviour = (_payload, ctx) => {
      if (ctx.repeat!.occurrence === firstTick) throw new Error('boom');
    };
    let firstTick = -1;
    const { queue, clock } = await start(uniquePrefix(), { maxAttempts: 2, backoff: { type: 'fixed', delayMs: 10 } });
    expectErrors(/boom|failed/);
    firstTick = (await queue.repeat('flaky', { everyMs: 1000 })).nextRunAt;
    // The tick, then its retry 10 ms later.
    await afterTime(clock, firstTick + 10 - (await clock.now()), () => digests.tasks.length >= 2, 'the retry');
    const failed = await pollUntil(async () => {
      const [item] = (await queue.repeats()).items;
      return item.lastOutcome !== undefined && item;
    }, 'the first outcome');
    expect(failed).toMatchObject({ lastOutcome: 'failed', nextRunAt: firstTick + 1000 });
    expect(await queue.deadLetters()).toEqual([]);
    await afterTime(clock, 1000, () => digests.tasks.length >= 3, 'the next tick');
    const [a, b, c] = digests.tasks;
    expect([a.ctx.attempt, b.ctx.attempt, c.ctx.attempt]).toEqual([1, 2, 1]);
    expect([a.ctx.repeat!.occurrence, b.ctx.repeat!.occurrence]).toEqual([firstTick, firstTick]);
    expect(c.ctx.repeat!.occurrence).toBe(firstTick + 1000);
    await pollUntil(async () => (await queue.repeats()).items[0].lastOutcome === 'completed', 'a completion');
    await queue.unrepeat('flaky');
  });

  it.each<[MissedTicks]>([['latest'], ['skip'], ['all']])(
    'with missed: %s, runs what fell due while no process ran',
    async (missed) => {
      // Short ticks: ten of them pass with no process in a second.
      const EVERY = 100;
      const prefix = uniquePrefix();
      const producer = await start(prefix, {}, { consumer: false });
      const { nextRunAt } = await producer.queue.repeat('tick', { everyMs: EVERY }, null, { missed });
      // Ten ticks and a little fall due with no consumer anywhere.
      await passTime(producer.clock, nextRunAt - (await producer.clock.now()) + 9 * EVERY + EVERY / 2);
      // Nothing is claimed before this: every tick up to it was missed.
      const resumedAt = await producer.clock.now();
      await harness.close(producer.app);
      const { queue, clock } = await start(prefix);
      await afterTime(
        clock,
        3 * EVERY,
        () => digests.tasks.some((task) => task.ctx.repeat!.occurrence > resumedAt + 2 * EVERY),
        'ticks on time',
      );
      expect(new Set(occurrences()).size).toBe(occurrences().length);
      const ran = (to: number) => occurrences().filter((occurrence) => occurrence <= to);
      const missedTicks = Math.floor((resumedAt - nextRunAt) / EVERY) + 1;
      expect(missedTicks).toBeGreaterThanOrEqual(10);
      if (missed === 'all') {
        expect(ran(resumedAt)).toEqual(Array.from({ length: missedTicks }, (_, i) => nextRunAt + i * EVERY));
      } else {
        // None of the older missed ticks runs; 'latest' runs one delivery of the pending (oldest) tick
        // as the latest tick due when it was claimed, 'skip' none.
        expect(ran(resumedAt - EVERY)).toEqual([]);
        const standIns = digests.tasks.filter((task) => task.ctx.runAt === nextRunAt);
        if (missed === 'skip') expect(standIns).toEqual([]);
        else {
          expect(standIns).toHaveLength(1);
          expect(standIns[0].ctx.repeat!.occurrence).toBeGreaterThanOrEqual(resumedAt - EVERY);
          expect(standIns[0].ctx.repeat!.occurrence).toBeLessThanOrEqual(standIns[0].ctx.firedAt);
        }
      }
      await queue.unrepeat('tick');
    },
  );

  it('refuses bad schedules and options with a QueueInputError, writing nothing', async () => {
    const { queue, clock } = await start(uniquePrefix(), {}, { consumer: false });
    const past = (await clock.now()) - 1000;
    const calls: (() => Promise<unknown>)[] = [
      () => queue.repeat('', { everyMs: 100 }),
      () => queue.repeat('x', { cron: '61 * * * *' }),
      () => queue.repeat('x', { everyMs: 100, cron: '* * * * *' } as never),
      () => queue.repeat('x', { every: 100 } as never),
      () => queue.repeat('x', { everyMs: 100 }, null, { tz: 'UTC' }),
      () => queue.repeat('x', { everyMs: 100 }, null, { mised: 'all' } as never),
      () => queue.repeat('x', { everyMs: 100 }, null, { endAt: past }),
      () => queue.repeats({ cursor: 'nope' }),
      () => queue.unrepeat(''),
    ];
    for (const call of calls) await expect(call()).rejects.toThrow(QueueInputError);
    expect((await queue.repeats()).items).toEqual([]);
    expect(await queue.stats()).toMatchObject({ scheduled: 0, scheduledTotal: 0 });
  });
});
