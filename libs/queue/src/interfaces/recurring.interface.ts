import type { ConsumerOptionsFactory } from './consumer-options.interface';
import type { BackoffOptions } from './queue-options.interface';
import type { MissedTicks, RepeatOutcome } from './repeat.interface';

/** When a `@Recurring` method runs, and how its runs are retried. */
export type RecurringOptions = ({ cron: string; everyMs?: never } | { everyMs: number; cron?: never }) & {
  /** Unique in the application: the schedule's id in Redis. Default `'<Class>.<method>'`. */
  name?: string;
  /** IANA time zone of a cron schedule. Default: UTC. */
  tz?: string;
  /** Ticks nothing ran (no process, a long run, an outage). Default `'latest'`. */
  missed?: MissedTicks;
  /**
   * A run not settled after this long has its signal aborted (reported: log, event, metric, health); the
   * schedule stays held until the run settles, so no second run starts beside it. Default: none, in
   * effect: 2^31 − 1 ms (about 24.8 days, the longest timer Node keeps), the most it may be.
   */
  handlerTimeoutMs?: number;
  /** Runs of one tick before it is given up (the schedule goes on). Default: `QUEUE_DEFAULTS.delayQueue.maxAttempts`. */
  maxAttempts?: number;
  /** Delay between the runs of one tick. Default: `QUEUE_DEFAULTS.delayQueue.backoff`. */
  backoff?: BackoffOptions;
};

/**
 * `@Recurring` options made at start-up from the providers `inject` lists (from any module):
 * `{ name: 'rollup', inject: [ConfigService], useFactory: (config) => ({ cron: config.get('ROLLUP_CRON') }) }`.
 * What the factory makes is laid over `name`, then checked as written-out options are.
 */
export type RecurringOptionsFactory = { name?: string } & ConsumerOptionsFactory<RecurringOptions>;

/** What a `@Recurring` method is handed. */
export interface RecurringContext {
  /** The schedule's name. */
  name: string;
  /** The tick this run stands for, epoch ms (retries keep it). */
  occurrence: number;
  /** Redis time at which this run was claimed, epoch ms (`firedAt - occurrence` is its lateness). */
  firedAt: number;
  /** Run of this tick, from 1. */
  attempt: number;
  /** Aborted when this run's lease was lost, it timed out, or the shutdown timeout ran out. */
  signal: AbortSignal;
}

/** A `@Recurring` schedule as `RecurringSchedules.list()` shows it. */
export interface RecurringScheduleInfo {
  name: string;
  /** The method that declared it (`Class.method`), in the process that declared it last. */
  declaredBy: string;
  /** Whether this process runs it: false for a schedule whose `@Recurring` is gone from this code. */
  handled: boolean;
  cron?: string;
  tz?: string;
  everyMs?: number;
  missed: MissedTicks;
  /** The pending (or running) tick, epoch ms. */
  nextRunAt: number;
  lastRunAt?: number;
  lastOutcome?: RepeatOutcome;
  /** Redis time at which the latest run that completed ended: what to alert on. */
  lastSuccessAt?: number;
  /**
   * Every definition of this schedule that processes declared (the one in effect first): more than one
   * `live` means processes running now disagree (a rolling deploy, or a rollback, under way).
   */
  declarations: RecurringDeclarationInfo[];
}

/** A definition of a `@Recurring` schedule that some process declared (see docs/recurring.md#rolling-deploys-and-rollbacks). */
export interface RecurringDeclarationInfo {
  cron?: string;
  tz?: string;
  everyMs?: number;
  missed: MissedTicks;
  /** The method, host and pid of the process that declared it last. */
  declaredBy: string;
  /** Redis time it was first declared: among live definitions, the most recent one is in effect. */
  firstDeclaredAt: number;
  /** Whether a process declaring it is alive (declared it within the last 15 s and did not shut down). */
  live: boolean;
  /** Whether it is the schedule in effect. */
  inEffect: boolean;
}
