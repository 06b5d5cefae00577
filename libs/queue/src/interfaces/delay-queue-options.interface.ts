import type { DeadLetterOptions, ReplicaWaitOptions, SchemaClass } from './fixed-queue-options.interface';
import type { ReconcileOptions } from './task-source.interface';

export interface BackoffOptions {
  type: 'fixed' | 'exponential';
  /** Delay before the first retry; exponential doubles it for each further attempt. */
  delayMs: number;
  /** Upper bound of an exponential delay. Default: `QUEUE_DEFAULTS.delayQueue.backoff.maxDelayMs`. */
  maxDelayMs?: number;
}

export interface DelayQueueOptions {
  /** Queue name: letters, digits, `.`, `_`, `-`; at most 100 characters. */
  name: string;
  /** Independent sub-queues (and Cluster hash slots) the tasks are spread over. Default: `QUEUE_DEFAULTS.delayQueue.shards`. */
  shards?: number;
  /**
   * Lease of a claimed task: not acknowledged within it (and not extended: a running handler's consumer
   * extends it every third of it), it is delivered again. Default: `QUEUE_DEFAULTS.delayQueue.leaseMs`.
   */
  leaseMs?: number;
  /**
   * The former name of `leaseMs`, still read as it (with a warning at start-up); giving both with
   * different values is refused.
   * @deprecated Use `leaseMs`, the lease's name on both queues.
   */
  visibilityTimeoutMs?: number;
  /** Deliveries before a failing task goes to the dead-letter set. Default: `QUEUE_DEFAULTS.delayQueue.maxAttempts`. */
  maxAttempts?: number;
  /** Delay between failed attempts. Default: `QUEUE_DEFAULTS.delayQueue.backoff`. */
  backoff?: BackoffOptions;
  /** class-validator class every payload must satisfy. */
  schema?: SchemaClass;
  /** OpenTelemetry spans for this queue's schedules and tasks (see docs/tracing.md). Default: the module's `tracing`. */
  tracing?: boolean;
  /** Dead tasks kept per shard, and what failed tasks keep of their error. Default: `QUEUE_DEFAULTS.delayQueue.deadLetter`. */
  deadLetter?: DeadLetterOptions;
  /** Size limit of one serialised payload; defaults to the module's `maxPayloadBytes`. */
  maxPayloadBytes?: number;
  /**
   * schedule, reschedule, shift, cancel and requeue resolve only once this many replicas hold the change
   * (Redis WAIT); see README "Guarantees". Default: off.
   */
  waitForReplicas?: ReplicaWaitOptions;
  /**
   * Default `retryMs` of the calls that are safe to repeat (`schedule` with an id, `reschedule`, `cancel`);
   * the others ignore it. A call's own `retryMs` overrides it. Default: `QUEUE_DEFAULTS.delayQueue.retryMs` (off).
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
 * Absent unless given: `maxPayloadBytes` and `tracing` (the module's apply), `schema`, `waitForReplicas`.
 * The lease is `leaseMs`, whichever of its names it was given under.
 */
export interface ResolvedDelayQueueOptions
  extends
    Required<
      Omit<
        DelayQueueOptions,
        | 'visibilityTimeoutMs'
        | 'backoff'
        | 'deadLetter'
        | 'maxPayloadBytes'
        | 'tracing'
        | 'schema'
        | 'waitForReplicas'
        | 'reconcile'
      >
    >,
    Pick<DelayQueueOptions, 'maxPayloadBytes' | 'tracing' | 'schema' | 'waitForReplicas' | 'reconcile'> {
  backoff: Required<BackoffOptions>;
  deadLetter: Required<DeadLetterOptions>;
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
 * Bounded retry of a call that is safe to repeat, when Redis could not be reached or did not answer
 * (`QueueConnectionError`, outcome `not-sent` or `unknown`): tries again, with a backoff, until one
 * answers or `retryMs` ms have passed since the call. 0: one try. See docs/errors.md.
 */
export interface WriteRetry {
  retryMs?: number;
}

/** `reschedule`'s new time, and its retry. */
export interface RescheduleOptions extends TaskTime, WriteRetry {}

/** The options of a call that is not safe to repeat: `retryMs` is refused, with the reason. */
export interface NoRetry {
  retryMs?: never;
}

export interface ScheduleOptions extends TaskTime, WriteRetry {
  /** Business id making the task addressable; generated when absent. */
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
