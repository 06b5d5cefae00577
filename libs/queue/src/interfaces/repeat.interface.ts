/** What a repeat does with ticks that fell due while nothing ran them (see docs/recurring.md). */
export type MissedTicks = 'latest' | 'skip' | 'all';

/** When a repeat ticks: a cron expression (six fields, with seconds, or five), or every `everyMs` ms. */
export type RepeatEvery = { cron: string } | { everyMs: number };

export interface RepeatOptions {
  /** IANA time zone of a cron schedule (`'Europe/Berlin'`). Default: UTC. */
  tz?: string;
  /** No tick before this time; `everyMs` ticks count from it instead of from the epoch. */
  startAt?: Date | number | string;
  /** No tick after this time: the repeat ends (and is removed) with its last occurrence. */
  endAt?: Date | number | string;
  /** Ticks missed while nothing ran them (no process, a long run, an outage). Default `'latest'`. */
  missed?: MissedTicks;
}

export interface ScheduledRepeat {
  id: string;
  /** The pending (or running) occurrence's tick, epoch ms. */
  nextRunAt: number;
}

/** How an occurrence ended: its handler resolved, or it failed its last attempt. */
export type RepeatOutcome = 'completed' | 'failed';

/** A repeat as `DelayQueue.repeats()` lists it. */
export interface RepeatInfo {
  id: string;
  cron?: string;
  tz?: string;
  everyMs?: number;
  missed: MissedTicks;
  startAt?: number;
  endAt?: number;
  /** The pending occurrence's tick (or the running one's), epoch ms. */
  nextRunAt: number;
  /** Redis time at which the latest occurrence ended. */
  lastRunAt?: number;
  lastOutcome?: RepeatOutcome;
  /** Redis time at which the latest occurrence that completed ended. */
  lastSuccessAt?: number;
}

/** The occurrence of a repeat a delivery runs (`DelayContext.repeat`). */
export interface RepeatOccurrence {
  /** The repeat's id (the task's). */
  id: string;
  /** The tick this occurrence stands for, epoch ms (its retries keep it). */
  occurrence: number;
}
