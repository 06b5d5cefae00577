import { QueueInputError } from '../errors';
import { scheduleProblem } from '../validation/schedule';
import { RepeatSchedule } from './repeat-schedule';

const at = (iso: string) => Date.parse(iso);

describe('RepeatSchedule', () => {
  it('ticks everyMs at multiples of it since the epoch, or since startAt', () => {
    const every = new RepeatSchedule({ everyMs: 1000 });
    expect(every.next(12_345)).toBe(13_000);
    expect(every.next(13_000)).toBe(14_000);
    expect(every.latest(13_999)).toBe(13_000);
    const started = new RepeatSchedule({ everyMs: 1000 }, { startAt: 10_250 });
    expect(started.next(0)).toBe(10_250);
    expect(started.next(10_250)).toBe(11_250);
    expect(started.latest(10_000)).toBeNull();
    expect(started.latest(12_000)).toBe(11_250);
  });

  it('follows cron in its time zone across a DST change', () => {
    // Europe/Berlin springs forward on 2026-03-29 (02:00 -> 03:00) and falls back on 2026-10-25.
    const daily = new RepeatSchedule({ cron: '0 30 1 * * *' }, { tz: 'Europe/Berlin' });
    expect(daily.next(at('2026-03-28T12:00:00Z'))).toBe(at('2026-03-29T00:30:00Z')); // 01:30 CET
    expect(daily.next(at('2026-03-29T00:30:00Z'))).toBe(at('2026-03-29T23:30:00Z')); // 01:30 CEST
    const hourly = new RepeatSchedule({ cron: '0 0 * * * *' }, { tz: 'Europe/Berlin' });
    const ticks: number[] = [];
    for (let tick = hourly.next(at('2026-03-29T00:00:00Z'))!; ticks.length < 3; tick = hourly.next(tick)!)
      ticks.push(tick);
    // One hour apart in real time whatever the wall clock says.
    expect(ticks).toEqual([at('2026-03-29T01:00:00Z'), at('2026-03-29T02:00:00Z'), at('2026-03-29T03:00:00Z')]);
    expect(daily.latest(at('2026-03-29T22:00:00Z'))).toBe(at('2026-03-29T00:30:00Z'));
    // 02:30 happens twice on 2026-10-25 (CEST, then CET): it runs once, at the first.
    const fallBack = new RepeatSchedule({ cron: '0 30 2 * * *' }, { tz: 'Europe/Berlin' });
    expect(fallBack.next(at('2026-10-24T12:00:00Z'))).toBe(at('2026-10-25T00:30:00Z'));
    expect(fallBack.next(at('2026-10-25T00:30:00Z'))).toBe(at('2026-10-26T01:30:00Z'));
  });

  it('computes the same ticks whatever the clock of the process', () => {
    const a = new RepeatSchedule({ cron: '*/5 * * * * *' }).window(at('2026-01-01T00:00:00.300Z'));
    const b = new RepeatSchedule({ cron: '*/5 * * * * *' }).window(at('2026-01-01T00:00:01.900Z'));
    expect(a.ticks[0]).toBe(at('2026-01-01T00:00:00Z'));
    expect(b.ticks.slice(0, 2)).toEqual(a.ticks.slice(0, 2));
  });

  it('ends at endAt', () => {
    const ending = new RepeatSchedule({ everyMs: 100 }, { endAt: 1000 });
    expect(ending.next(950)).toBe(1000);
    expect(ending.next(1000)).toBeNull();
    expect(ending.window(900).ticks.at(-1)).toBe(1000);
    expect(ending.window(900).complete).toBe(true);
    expect(ending.window(60_000)).toEqual({ lowerBound: 58_000, prev: 1000, ticks: [], complete: true });
  });

  it('keeps at most the last 100 missed ticks under missed: all', () => {
    const all = new RepeatSchedule({ everyMs: 10 }, { missed: 'all' });
    expect(all.following(0, 5)).toBe(10);
    expect(all.following(0, 500)).toBe(10);
    expect(all.following(0, 5000)).toBe(4010);
    expect(new RepeatSchedule({ everyMs: 10 }).following(0, 5000)).toBe(10);
  });

  it('refuses schedules that mean nothing', () => {
    const bad: [unknown, unknown][] = [
      [{}, {}],
      [{ cron: '* * * * *', everyMs: 5 }, {}],
      [{ cron: 'every day' }, {}],
      [{ cron: '* * * * *' }, { tz: 'Mars/Olympus' }],
      [{ everyMs: 0 }, {}],
      [{ everyMs: 1.5 }, {}],
      [{ everyMs: 100 }, { tz: 'UTC' }],
      [{ everyMs: 100 }, { missed: 'some' }],
      [{ everyMs: 100 }, { startAt: 2000, endAt: 1000 }],
      [{ everyMs: 100 }, { startAt: 'soon' }],
    ];
    for (const [every, options] of bad)
      expect(() => new RepeatSchedule(every as never, options as never)).toThrow(QueueInputError);
  });

  it('says which field of a cron is wrong, not the cron package\'s "Unknown alias"', () => {
    expect(() => new RepeatSchedule({ cron: '0 eve * * *' })).toThrow(
      'repeat: cron "0 eve * * *": its hour field "eve" is not valid (0-23, with , - / and *)',
    );
    expect(() => new RepeatSchedule({ cron: '* * * * *' }, { tz: 'Mars/Olympus' })).toThrow(
      `repeat: tz "Mars/Olympus" is not an IANA time zone name`,
    );
  });

  it('words a refusal as @Recurring does: one check of a schedule for both', () => {
    expect(() => new RepeatSchedule({ everyMs: 1.5 })).toThrow(
      'repeat: everyMs must be an integer between 1 and 31622400000 (got 1.5)',
    );
    expect(() => new RepeatSchedule({ cron: '* * * * *', everyMs: 5 } as never)).toThrow(
      'repeat: give either cron or everyMs, not both (got cron "* * * * *", a string and everyMs 5)',
    );
    expect(scheduleProblem({ everyMs: 100 }, { tz: 'UTC' })).toBe('tz applies to a cron schedule only, not to everyMs');
    expect(scheduleProblem({ everyMs: 100 }, { missed: 'some' })).toBe(
      `missed must be 'latest', 'skip' or 'all' (got "some", a string)`,
    );
    expect(scheduleProblem({ cron: '0 */5 * * * *' }, { tz: 'Europe/Paris', missed: 'all' })).toBeUndefined();
  });
});
