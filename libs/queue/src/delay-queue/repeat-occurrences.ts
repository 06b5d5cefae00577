import type { RepeatOccurrence } from '../interfaces';
import type { DelayAdvanceReply } from './lua/delay-advance';
import type { RepeatDeclared } from './lua/delay-repeat';
import { decodeRepeatEntry } from './lua/repeat-entry';
import type { ServerClock } from '../redis/server-clock';
import type { ClaimedTask, DelayQueueStore } from './delay-queue.store';
import { RepeatSchedule } from './repeat-schedule';

/**
 * Calls whose tick window missed Redis' clock are made again around the time Redis replied; a third
 * miss (a clock jumping by more than the window between two calls) is reported as it is.
 */
const CALLS = 3;

/** What a claimed occurrence of a repeat is to do. */
export interface OccurrencePlan {
  schedule: RepeatSchedule;
  occurrence: RepeatOccurrence;
  /** Not run: its last attempt's lease ran out ('failed'), or its tick was missed under `missed: 'skip'`. */
  skip?: 'failed' | 'skipped';
}

/**
 * Ticks of repeats, between the schedules (computed here, from the schedule alone) and Redis' clock
 * (which decides, in the scripts, which of them is due).
 */
export class RepeatOccurrences {
  constructor(
    private readonly store: DelayQueueStore,
    private readonly clock: ServerClock,
  ) {}

  /** Declares a repeat, placing its first occurrence at the first tick after Redis' now. */
  async declare(shard: number, id: string, schedule: RepeatSchedule, json: string): Promise<RepeatDeclared> {
    let serverNow = this.clock.estimate();
    for (let call = 1; ; call++) {
      const window = schedule.window(serverNow);
      const declared = await this.store.repeat(shard, { id, schedule: schedule.text, json, window });
      if (declared.status !== 'clock' || call === CALLS) return declared;
      serverNow = declared.serverNow;
    }
  }

  /**
   * What to do with a claimed occurrence, at Redis' `serverNow` of the claim. A first delivery whose
   * next tick has passed too was missed (no process ran it in time): under 'latest' it runs for the latest
   * missed tick, under 'skip' not at all; under 'all' each runs in turn.
   */
  plan(task: ClaimedTask, serverNow: number, maxAttempts: number): OccurrencePlan {
    const entry = decodeRepeatEntry(task.repeat!);
    const schedule = RepeatSchedule.parse(entry.schedule);
    const plan: OccurrencePlan = { schedule, occurrence: { id: task.id, occurrence: entry.occurrence } };
    if (task.attempt > maxAttempts) return { ...plan, skip: 'failed' };
    // A retry is of its tick, however late: the missed ones are dealt with when it ends.
    if (task.attempt > 1) return plan;
    const next = schedule.next(entry.occurrence);
    if (next === null || next > serverNow || schedule.missed === 'all') return plan;
    if (schedule.missed === 'skip') return { ...plan, skip: 'skipped' };
    const latest = schedule.latest(serverNow, entry.occurrence) ?? entry.occurrence;
    return { ...plan, occurrence: { id: task.id, occurrence: latest } };
  }

  /** Ends an occurrence and places the next one (none when the repeat was removed or has ended). */
  async end(
    shard: number,
    task: ClaimedTask,
    plan: OccurrencePlan,
    outcome: 'completed' | 'failed' | 'skipped',
    error = '',
  ): Promise<DelayAdvanceReply> {
    let { schedule } = plan;
    const { occurrence } = plan.occurrence;
    let serverNow = this.clock.estimate();
    for (let call = 1; ; call++) {
      const ended = await this.store.advance(shard, {
        id: task.id,
        token: task.token,
        schedule: schedule.text,
        missed: schedule.missed,
        outcome,
        error,
        after: schedule.following(occurrence, serverNow),
        window: schedule.window(serverNow, occurrence),
      });
      if (call === CALLS) return ended;
      if (ended.status === 'clock') serverNow = ended.serverNow;
      else if (ended.status === 'changed') schedule = RepeatSchedule.parse(ended.schedule);
      else return ended;
    }
  }
}
