import type { QueueBaseOptions, ResolvedQueueBaseOptions } from './queue-options.interface';

/** A DelayQueue's options: those both queues take (`QueueBaseOptions`) and its own. */
export interface DelayQueueOptions extends QueueBaseOptions {
  /**
   * The former name of `leaseMs`, still read as it (with a warning at start-up); giving both with
   * different values is refused.
   * @deprecated Use `leaseMs`, the lease's name on both queues.
   */
  visibilityTimeoutMs?: number;
  /**
   * Default `retryMs` of its writes (`schedule`, `reschedule`, `shift`, `cancel`); a call's own `retryMs`
   * overrides it. Default: `QUEUE_DEFAULTS.delayQueue.retryMs` (off).
   */
  retryMs?: number;
  /**
   * How the queue's `@TaskSource` runs besides when its record is found missing (see docs/delay-queue.md,
   * "Task source"): every `everyMs` or on `cron`, and the defaults of `reconcile()`. Default: off.
   */
  reconcile?: ReconcileOptions;
}

/**
 * A DelayQueue's options as it runs with them (`DelayQueue.options`): validated, every default applied.
 * Absent unless given: `reconcile`, and those of `ResolvedQueueBaseOptions`. The lease is `leaseMs`,
 * whichever of its names it was given under.
 */
export interface ResolvedDelayQueueOptions
  extends
    ResolvedQueueBaseOptions,
    Required<Omit<DelayQueueOptions, keyof QueueBaseOptions | 'visibilityTimeoutMs' | 'reconcile'>>,
    Pick<DelayQueueOptions, 'reconcile'> {}

/** How one pass of a queue's task source writes what it lists (`DelayQueue.reconcile`). */
export interface ReconcileCallOptions {
  /**
   * What a listed task does to a task of its id already in Redis. Default `'keep'` (or the queue's
   * `reconcile.onExists`): scheduled, running and dead tasks are left alone, missing ones written.
   */
  onExists?: OnExists;
  /**
   * Also cancel the scheduled tasks the pass did not list (never a running or dead one, never a repeat's
   * occurrence). Default false (or the queue's `reconcile.sweep`).
   */
  sweep?: boolean;
}

/**
 * `registerDelayQueue({ reconcile })`: when the queue's `@TaskSource` runs besides a lost record (which
 * runs it whether or not this is given), and its passes' defaults.
 */
export interface ReconcileOptions extends ReconcileCallOptions {
  /** A pass every this many ms, once across every process (a `@Recurring` schedule). */
  everyMs?: number;
  /** A pass on this cron expression (seconds field first), once across every process. */
  cron?: string;
}

/** When a task is due: `runAt` (a Date, epoch ms or ISO string) or `delayMs` from now (Redis time); neither means now. */
export interface TaskTime {
  delayMs?: number;
  runAt?: Date | number | string;
}

/**
 * What a schedule does when a task of its id exists (in any state): `replace` it (new payload, new time,
 * attempts reset), `keep` it as it is, or keep whichever time is `earlier` or `later`, the existing one
 * compared by its `runAt` as `get` reports it (the task replaced when the new time wins, else kept).
 */
export type OnExists = 'replace' | 'keep' | 'earlier' | 'later';

/** A debounced schedule's bound (see `ScheduleOptions.debounce`). */
export interface DebounceOptions {
  /**
   * How long, at most, after the schedule that created the task it falls due: each later schedule of the
   * id moves the task to its new time, but never past this. Its delivery (or a cancel) ends the window.
   */
  maxWaitMs: number;
}

/**
 * How a write is made safe to send more than once (docs/errors.md, "Calls safe to repeat"). Redis applies
 * such a call at most once: the first try it runs records its result for the call's window, and any later
 * try within it gets that result and writes nothing.
 */
export interface WriteRetry {
  /**
   * Bounded retry when Redis could not be reached or did not answer (`QueueConnectionError`, outcome
   * `not-sent` or `unknown`): tries again, with a backoff, until one answers or `retryMs` ms (0 to
   * 600,000) have passed since the call. 0: one try.
   */
  retryMs?: number;
  /**
   * Names the call so that the application can send it again itself, from any process: a call with the
   * same key to the same queue, operation and group or task id, within 10 minutes of the first one Redis
   * applied (or its `retryMs` plus `commandTimeoutMs`, if longer), gets the first one's result and writes
   * nothing. 1 to 512 UTF-8 bytes; one key per call (a request id, a UUID).
   */
  idempotencyKey?: string;
}

/** `reschedule`'s new time, and its retry. */
export interface RescheduleOptions extends TaskTime, WriteRetry {}

export interface ScheduleOptions extends TaskTime, WriteRetry {
  /**
   * Business id making the task addressable; generated when absent (from the `idempotencyKey` when one is
   * given, so that every try of the call names the same task).
   */
  id?: string;
  /** When a task of this id exists. Default `'replace'`. */
  onExists?: OnExists;
  /** `false` is `onExists: 'keep'`, `true` is `'replace'` (the older spelling); given with onExists, they must agree. */
  replace?: boolean;
  /** Each schedule of the id pushes the task back, never past `maxWaitMs` after the one that created it; needs an id. */
  debounce?: DebounceOptions;
}

export interface ScheduledTask {
  id: string;
  /** When the task is due, in epoch milliseconds (Redis server time). */
  runAt: number;
}

/** What `schedule` did: the task's time now, and whether this call wrote it. */
export interface ScheduleResult extends ScheduledTask {
  /**
   * True when this call created the task or replaced it (payload and time); false when it left an existing
   * one as it was (`onExists: 'keep'`, or an `'earlier'` / `'later'` whose time did not win), in which case
   * `runAt` is that task's time as `get` reports it.
   */
  changed: boolean;
}

export type TaskState = 'scheduled' | 'active' | 'dead';

export interface TaskInfo<T> {
  id: string;
  state: TaskState;
  /** Due time while scheduled; the due time of the running delivery while active; the last one when dead. */
  runAt: number;
  /** Deliveries so far. */
  attempts: number;
  payload: T;
}

/** A task that failed its last attempt, as `DelayQueue.deadLetters` lists it. */
export interface DeadTask<T = unknown> extends TaskInfo<T> {
  /** When it was dead-lettered, Redis time in epoch ms. */
  diedAt: number;
  lastError?: string;
}

export interface DelayQueueStats {
  scheduled: number;
  active: number;
  dead: number;
  /** Earliest due time of a scheduled task, or null when none is scheduled. */
  nextDueAt: number | null;
  scheduledTotal: number;
  fired: number;
  completed: number;
  retried: number;
  deadTotal: number;
  /**
   * Deliveries given back unfinished at shutdown, ever (each counted as an attempt when its handler was
   * past handlerTimeoutMs). Growing with every restart, it shows a task that never finishes.
   */
  givenBack: number;
  /** Scheduled tasks already due, waiting for a consumer. */
  due: number;
  /** How long the earliest scheduled task has been overdue, by Redis' clock; 0 when none is. */
  lagMs: number;
}

/** A task waiting for its time (see `DelayQueue.upcoming`). */
export interface UpcomingTask {
  id: string;
  runAt: number;
}
