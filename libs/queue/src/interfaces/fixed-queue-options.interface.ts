import type { QueueBaseOptions, ResolvedQueueBaseOptions } from './queue-options.interface';

/**
 * A FixedQueue's options: those both queues take (`QueueBaseOptions`; here `leaseMs` applies to ordered
 * queues, `maxAttempts`, `backoff` and `deadLetter` to at-least-once ones), and its own.
 */
export interface FixedQueueOptions extends QueueBaseOptions {
  /** Most messages a group holds; a push beyond it evicts the oldest. Default: `QUEUE_DEFAULTS.fixedQueue.capacity`. */
  capacity?: number;
  /** Most messages handed to a consumer at once, all of one group. Default: `QUEUE_DEFAULTS.fixedQueue.batchSize`. */
  batchSize?: number;
  /** A group with fewer than `batchSize` messages is flushed once its oldest message waited this long. Default: `QUEUE_DEFAULTS.fixedQueue.maxWaitMs`. */
  maxWaitMs?: number;
  /** Messages older than this are discarded (counted as expired), never delivered. Default: no limit. */
  maxAgeMs?: number;
  /**
   * A group nobody pushes to for this long is deleted, its messages counted as expired, by the processes
   * holding the queue: within min(`ttlMs`, 60 s) more, and never while its batch is out. Default:
   * `QUEUE_DEFAULTS.fixedQueue.ttlMs`.
   */
  ttlMs?: number;
  /**
   * One batch of a group out at a time, in push order, across every consumer and process; the next
   * becomes claimable once the previous is finished or its lease ran out. Other groups still run in
   * parallel. `false`: a group's batches may run in parallel (at-most-once only). Default: `QUEUE_DEFAULTS.fixedQueue.ordered`.
   */
  ordered?: boolean;
  /**
   * `'at-most-once'` (default): a claimed batch leaves Redis; a consumer that dies loses it.
   * `'at-least-once'`: it stays until its handler resolves, is delivered again (attempt + 1) when the
   * lease runs out or the handler throws, and goes to the dead letters after `maxAttempts` deliveries.
   * Default: `QUEUE_DEFAULTS.fixedQueue.delivery`.
   */
  delivery?: FixedQueueDelivery;
  /**
   * The former name of `backoff` (a delay doubled on each attempt, at most 1 h), still read as
   * `backoff: { type: 'exponential', delayMs: min(retryDelayMs, 1 h), maxDelayMs: 1 h }` with a warning at
   * start-up; 0 to a day. Giving both with different values is refused.
   * @deprecated Use `backoff`, the words of every retry.
   */
  retryDelayMs?: number;
  /**
   * At-least-once: what becomes of a batch that failed its last attempt. `'dead-letter'`: it moves to
   * the dead letters and its group goes on with its next batch. `'pause-group'`: it stays its group's
   * head and the group is paused (reason `'exhausted'`), nothing of it delivered until `resumeGroup`,
   * which delivers that batch again from attempt 1. Default: `QUEUE_DEFAULTS.fixedQueue.onExhausted`.
   */
  onExhausted?: FixedQueueExhausted;
  /**
   * At most `max` batches of one group start per `durationMs`, across every process (retries count):
   * a group that used its window waits, growing into a bigger batch, while other groups go on.
   * Default: none.
   */
  groupRateLimit?: GroupRateLimitOptions;
}

/** A rate per group (`groupRateLimit`): at most `max` batch starts in any `durationMs`. */
export interface GroupRateLimitOptions {
  /** Batches of one group that may start within `durationMs`: 1 to 1,000. */
  max: number;
  /** The window, ms: 1 to a day. */
  durationMs: number;
}

/** What an at-least-once FixedQueue does with a batch that failed its last attempt (`onExhausted`). */
export type FixedQueueExhausted = 'dead-letter' | 'pause-group';

/**
 * A FixedQueue's options as it runs with them (`FixedQueue.options`): validated, every default applied.
 * Absent unless given: `maxAgeMs` (no age limit), `groupRateLimit`, and those of `ResolvedQueueBaseOptions`.
 * The retry wait is `backoff`, whichever of its names it was given under.
 */
export interface ResolvedFixedQueueOptions
  extends
    ResolvedQueueBaseOptions,
    Required<Omit<FixedQueueOptions, keyof QueueBaseOptions | 'retryDelayMs' | UnsetFixedQueueOptions>>,
    Pick<FixedQueueOptions, UnsetFixedQueueOptions> {}

/** Options of a FixedQueue's own left unset when not given: no default applies. */
type UnsetFixedQueueOptions = 'maxAgeMs' | 'groupRateLimit';

export type FixedQueueDelivery = 'at-most-once' | 'at-least-once';

/** A batch that failed its last attempt (at-least-once), as `FixedQueue.deadLetters` lists it. */
export interface DeadBatch<T = unknown> {
  /** Pass it to `FixedQueue.requeue`. */
  id: string;
  group: string;
  /** Oldest first, as they were delivered. */
  messages: T[];
  /** When each message was pushed, Redis time in epoch ms. */
  pushedAt: number[];
  attempts: number;
  /** The last attempt's error (name and message), or why it ended ('lease expired: ...'). */
  lastError: string;
  diedAt: number;
}

export interface PushResult {
  /** Older messages of the group evicted to make room (drop-oldest at capacity). */
  dropped: number;
}

export interface FixedQueueStats {
  /** Groups holding messages that wait for a consumer, plus (ordered) groups being handled; paused groups are counted in `pausedGroups`. */
  groups: number;
  /** Messages held in all groups. */
  pending: number;
  pushed: number;
  dropped: number;
  expired: number;
  /** Messages handed to a handler (at-least-once: acknowledged). */
  delivered: number;
  /** At-least-once: messages in dead batches now (re-queued or trimmed by capacity, they leave it). */
  dead: number;
  /** At-least-once: messages ever moved to the dead letters (as DelayQueue's `deadTotal`). */
  deadTotal: number;
  /** At-least-once: messages delivered again after a failure or a lease that ran out. */
  redelivered: number;
  /** At-least-once: messages brought back from the dead letters. */
  requeued: number;
  /**
   * At-least-once: deliveries given back unfinished at shutdown, ever (each counted as an attempt when
   * its handler was past handlerTimeoutMs). Growing with every restart, it shows a batch that never
   * finishes.
   */
  givenBack: number;
  /** Ordered queues: groups whose batch is being handled now. */
  active: number;
  /** Groups paused now (`pauseGroup`); those not being handled are not counted in `groups`. */
  pausedGroups: number;
  /** Earliest time a group holding messages is due (Redis time, epoch ms), or null when none holds any. */
  nextDueAt: number | null;
  /** How long the most overdue group has waited past its due time, by Redis' clock; 0 when none is overdue. */
  lagMs: number;
}

/** A group at the head of its shard's ready index (see `FixedQueue.hottestGroups`). */
export interface GroupSummary {
  group: string;
  /** Messages it holds. */
  size: number;
  /** When it is (or was) due for a consumer, Redis time in ms: now for a full group. */
  dueAt: number;
}
