import type { GroupPauseReason } from './inspection.interface';
import type { QueueKind } from './queue-kind.interface';
import type { ReconcileResult, ReconcileTrigger } from './task-source.interface';

/** One write of pushes to one shard (pushes of one event-loop turn are written together). */
export interface MessagesPushedEvent {
  queue: string;
  /** Messages stored by this write. */
  count: number;
  /** Older messages it evicted at capacity, over all its groups. */
  dropped: number;
}

/** Older messages of a group evicted by a push at capacity (drop-oldest). */
export interface MessagesDroppedEvent {
  queue: string;
  group: string;
  count: number;
}

/**
 * Messages of a group discarded without delivery, as a consumer learned when it claimed the group:
 * older than `maxAgeMs`, or lost with a key that expired (`ttlMs`).
 */
export interface MessagesExpiredEvent {
  queue: string;
  group: string;
  count: number;
}

export interface BatchEvent {
  queue: string;
  group: string;
  /** Messages in the batch. */
  size: number;
  /** Attempts the handler was given (the consumer's `maxAttempts` at most). */
  attempts: number;
  /** Redis server time of the claim, epoch ms. */
  claimedAt: number;
  /** Time spent in the handler over every attempt (retry delays excluded), ms. */
  durationMs: number;
  /** `Class.method` of the consumer. */
  consumer: string;
}

/** A `@BatchConsumer` handler resolved. */
export type BatchCompletedEvent = BatchEvent;

/** A `@BatchConsumer` handler still threw after its last retry; the batch is not delivered again. */
export interface BatchFailedEvent extends BatchEvent {
  error: unknown;
}

/** Tasks written by one `schedule` call to Redis (schedules of one event-loop turn are written together). */
export interface TasksScheduledEvent {
  queue: string;
  count: number;
}

export interface TaskEvent {
  queue: string;
  id: string;
  /** Delivery number, from 1. */
  attempt: number;
  /**
   * When this delivery became due, epoch ms (Redis time): the task's time, or, delivered again after a
   * lease ran out or a give-back at shutdown, when that happened.
   */
  runAt: number;
  /** When the task was due, epoch ms (Redis time), however many deliveries it took: see `DelayContext.dueAt`. */
  dueAt: number;
  /** Redis server time of the claim, epoch ms: `firedAt - dueAt` is the lateness. */
  firedAt: number;
  /** `Class.method` of the consumer. */
  consumer: string;
}

/** A due task was claimed by a consumer of this process and is about to run. */
export type TaskFiredEvent = TaskEvent;

export interface TaskRunEvent extends TaskEvent {
  /** Time spent in the handler, ms. */
  durationMs: number;
}

/** A task's handler resolved and its acknowledgement was recorded. */
export type TaskCompletedEvent = TaskRunEvent;

/** A task's handler threw; the task will run again at `nextRunAt`. */
export interface TaskFailedEvent extends TaskRunEvent {
  error: unknown;
  /** When the retry is due, epoch ms (Redis time). */
  nextRunAt: number;
}

/** A task's handler threw on its last allowed attempt; the task is in the dead-letter set. */
export interface TaskDeadEvent extends TaskRunEvent {
  error: unknown;
  /** Redis server time it was dead-lettered, epoch ms. */
  diedAt: number;
}

/** A consumer could not talk to Redis (a claim, an acknowledgement, a lease extension); it retries by itself. */
export interface ConsumerErrorEvent {
  queue: string;
  /** `Class.method` of the consumer. */
  consumer: string;
  /** What it was doing: `claim`, `ack`, `fail` or `extend`. */
  operation: 'claim' | 'ack' | 'fail' | 'extend';
  error: unknown;
}

/**
 * A handler of this process did not settle within `handlerTimeoutMs`: its signal aborted with a
 * HandlerTimeoutError and its slot was freed; its group or task stays held until it settles.
 */
export interface HandlerTimeoutEvent {
  queue: string;
  /** `Class.method` of the consumer. */
  consumer: string;
  /** The batch's group (FixedQueue), or undefined. */
  group?: string;
  /** The task's id (DelayQueue), or undefined. */
  id?: string;
  timeoutMs: number;
}

/** `pause()` or `resume()` of a queue returned in this process: every consumer of it, in every process, stopped or started claiming. */
export interface QueuePauseEvent {
  queue: string;
  kind: QueueKind;
}

/** A group of a FixedQueue was paused by a call of this process: nothing of it is claimed until `resumeGroup`. */
export interface GroupPausedEvent {
  queue: string;
  group: string;
  reason: GroupPauseReason;
}

/** A paused group of a FixedQueue was resumed by a call of this process: consumers of every process were woken. */
export interface GroupResumedEvent {
  queue: string;
  group: string;
}

/**
 * This process found something it declares missing in Redis (its data was lost: FLUSHALL, a restart
 * without persistence, a failover to an empty replica) and declared it again.
 */
export interface StateRedeclaredEvent {
  queue: string;
  /** A `@Recurring` schedule (`name` is its name), or a queue's record of its kind and shards. */
  what: 'recurring' | 'queue';
  name: string;
}

/**
 * This process moved to another data contract (`dataContract: 'auto'`): to an earlier one because a
 * process speaking it is live under the prefix (a deploy or a rollback started), or to its own because
 * none has been seen for a lease (the rollout finished). Not a queue's event: `queue` is never set.
 */
export interface ProcessesContractChangedEvent {
  queue?: undefined;
  from: number;
  to: number;
  /** How many live processes run each library version. */
  versions: Record<string, number>;
}

/**
 * This process found the queue's record gone in Redis after it had seen it, and wrote it again: the
 * queue's data was lost with it (its messages or tasks, its counters). Health (`dataLostAt`, up unless
 * `dataLoss: 'fail'`), the `nrq_data_loss_unacknowledged` gauge and the dashboard report the queue until a
 * pass of its task source or `acknowledgeDataLoss()`; a DelayQueue with a `@TaskSource` starts that pass
 * (`restoring`).
 */
export interface QueueDataLostEvent {
  queue: string;
  kind: QueueKind;
  /** A pass of the queue's `@TaskSource` was started to rebuild it. */
  restoring: boolean;
}

/** A pass of a DelayQueue's `@TaskSource` run by this process ended (see `DelayQueue.reconcile`). */
export interface QueueReconciledEvent extends ReconcileResult {
  queue: string;
  trigger: ReconcileTrigger;
}

/** Every event `QueueEvents` emits, with its payload. */
export interface QueueEventMap {
  'messages.pushed': MessagesPushedEvent;
  'messages.dropped': MessagesDroppedEvent;
  'messages.expired': MessagesExpiredEvent;
  'batch.completed': BatchCompletedEvent;
  'batch.failed': BatchFailedEvent;
  'tasks.scheduled': TasksScheduledEvent;
  'task.fired': TaskFiredEvent;
  'task.completed': TaskCompletedEvent;
  'task.failed': TaskFailedEvent;
  'task.dead': TaskDeadEvent;
  'consumer.error': ConsumerErrorEvent;
  'handler.timeout': HandlerTimeoutEvent;
  'queue.paused': QueuePauseEvent;
  'queue.resumed': QueuePauseEvent;
  'group.paused': GroupPausedEvent;
  'group.resumed': GroupResumedEvent;
  'state.redeclared': StateRedeclaredEvent;
  'queue.data-lost': QueueDataLostEvent;
  'queue.reconciled': QueueReconciledEvent;
  'processes.contract-changed': ProcessesContractChangedEvent;
}

export type QueueEventName = keyof QueueEventMap;

export type QueueEventListener<E extends QueueEventName> = (payload: QueueEventMap[E]) => unknown;

export interface QueueEventListenerOptions {
  /** Only events of this queue. Default: every queue. */
  queue?: string;
}
