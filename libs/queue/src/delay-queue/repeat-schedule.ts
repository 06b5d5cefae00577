import { CronTime } from 'cron';
import { badRepeat } from './delay-queue.messages';
import type { MissedTicks, RepeatEvery, RepeatOptions } from '../interfaces';
import type { TickWindow } from './lua/tick-window';
import { scheduleProblem } from '../validation/schedule';
import { toEpochMs } from '../validation/time';

/** Missed ticks run in order under `missed: 'all'`, at most this many: the latest ones. */
export const MAX_MISSED_RUNS = 100;
/**
 * Ticks sent to a script around this process' estimate of Redis' clock. The script checks the window
 * covers Redis' real now and asks again with that now when it does not (a clock estimate off by more).
 */
const WINDOW_SLACK_MS = 2000;
const MAX_WINDOW_TICKS = 256;
/** How far back a cron schedule is searched for its latest tick before it is taken to have none. */
const MAX_LOOKBACK_MS = 400 * 24 * 3600_000;

/**
 * A validated schedule: its ticks follow from it alone (never from a clock), so every process computes
 * the same ones. `text` is its canonical form, compared in Redis to tell a changed schedule from the same one.
 */
export class RepeatSchedule {
  readonly cron?: string;
  readonly everyMs?: number;
  readonly tz?: string;
  readonly startAt?: number;
  readonly endAt?: number;
  readonly missed: MissedTicks;
  readonly text: string;
  private readonly cronTime?: CronTime;

  constructor(every: RepeatEvery, options: RepeatOptions = {}) {
    const problem = scheduleProblem(every, options);
    if (problem !== undefined) throw badRepeat(problem);
    const { cron, everyMs } = every as { cron?: string; everyMs?: number };
    const { tz, startAt, endAt, missed = 'latest' } = options;
    this.missed = missed;
    if (cron !== undefined) {
      this.cronTime = new CronTime(cron, tz);
      this.cron = cron;
      this.tz = tz;
    } else this.everyMs = everyMs;
    if (startAt !== undefined) this.startAt = toEpochMs(startAt, 'startAt');
    if (endAt !== undefined) this.endAt = toEpochMs(endAt, 'endAt');
    if (this.startAt !== undefined && this.endAt !== undefined && this.endAt < this.startAt)
      throw badRepeat(`endAt (${this.endAt}) is before startAt (${this.startAt})`);
    const { cron: c, everyMs: e, tz: z, startAt: s, endAt: x } = this;
    this.text = JSON.stringify({ cron: c, everyMs: e, tz: z, startAt: s, endAt: x, missed });
  }

  /** The schedule stored with a repeat (as `text` holds it). */
  static parse(text: string): RepeatSchedule {
    const { cron, everyMs, tz, startAt, endAt, missed } = JSON.parse(text) as Record<string, never>;
    return new RepeatSchedule(cron !== undefined ? { cron } : { everyMs }, { tz, startAt, endAt, missed });
  }

  /** The first tick strictly after `after`, or null when the schedule has ended. */
  next(after: number): number | null {
    const from = this.startAt !== undefined && after < this.startAt ? this.startAt - 1 : after;
    let tick: number;
    if (this.everyMs !== undefined) {
      const anchor = this.startAt ?? 0;
      tick = anchor + (Math.floor((from - anchor) / this.everyMs) + 1) * this.everyMs;
    } else {
      tick = this.cronTime!.getNextDateFrom(new Date(from), this.tz).toMillis();
    }
    return this.endAt !== undefined && tick > this.endAt ? null : tick;
  }

  /** The latest tick at or before `at` and after `after`, or null. */
  latest(at: number, after = -Infinity): number | null {
    const end = this.endAt !== undefined ? Math.min(at, this.endAt) : at;
    if (this.everyMs !== undefined) {
      const anchor = this.startAt ?? 0;
      if (end < anchor) return null;
      const tick = anchor + Math.floor((end - anchor) / this.everyMs) * this.everyMs;
      return tick > after ? tick : null;
    }
    // Cron can only step forward: look back over a window that grows until it holds a tick.
    for (let span = 60_000; ; span *= 8) {
      const from = Math.max(end - span, after);
      let found: number | null = null;
      for (let tick = this.next(from); tick !== null && tick <= end; tick = this.next(tick)) found = tick;
      if (found !== null || from === after || span > MAX_LOOKBACK_MS) return found;
    }
  }

  /** The `count`-th latest tick at or before `at` (1: the latest), walking back; null when there are fewer. */
  private latestBack(at: number, count: number, after: number): number | null {
    let tick = this.latest(at, after);
    for (let i = 1; i < count && tick !== null; i++) tick = this.latest(tick - 1, after);
    return tick;
  }

  /** The ticks around `serverNow` (this process' estimate of it) a script chooses from, all after `after`. */
  window(serverNow: number, after = -Infinity): TickWindow {
    const lowerBound = Math.max(serverNow - WINDOW_SLACK_MS, after);
    const prev = this.latest(lowerBound, after);
    const ticks: number[] = [];
    let complete = false;
    for (let tick = this.next(lowerBound); ; tick = this.next(tick)) {
      if (tick === null) {
        complete = true;
        break;
      }
      ticks.push(tick);
      if (tick > serverNow + WINDOW_SLACK_MS || ticks.length >= MAX_WINDOW_TICKS) break;
    }
    return { lowerBound, prev, ticks, complete };
  }

  /**
   * The tick an acknowledged occurrence is followed by when nothing was missed (or under `missed: 'all'`):
   * the next after it, but no more than MAX_MISSED_RUNS behind `serverNow`.
   */
  following(occurrence: number, serverNow: number): number | null {
    const next = this.next(occurrence);
    if (next === null || this.missed !== 'all' || next > serverNow) return next;
    const oldest = this.latestBack(serverNow, MAX_MISSED_RUNS, occurrence);
    return oldest !== null && oldest > next ? oldest : next;
  }
}
