import type * as Otel from '@opentelemetry/api';
import type { QueueEvents } from '../events/queue-events';
import type { QueueKind } from '../interfaces';
import type { ProcessSpan } from '../tracing/queue-tracer';
import type { RunningDelivery } from './deliveries';
import type { RetryPolicy } from './retry-policy';
import type { Claimed } from './shard-poller';

/**
 * A delivery an adapter opened for a claimed item: what it holds, how its handler is called, and how
 * the reporter names it. The runtime counts in-process attempts in `attempt` and keeps its span.
 */
export interface OpenedDelivery extends RunningDelivery {
  /** The attempt under way: the claim's, then one more per in-process retry. */
  attempt: number;
  /** The delivery's process span, when its queue is traced (set by the runtime). */
  span?: ProcessSpan;
  /** Nothing to run (a repeat occurrence that is only skipped): the runtime settles it at once. */
  readonly skip?: boolean;
  /** Calls the handler for the attempt under way. */
  call(): unknown;
  /** Log-line fields naming it (`group`, `size` / `id`). */
  fields(): Record<string, string | number>;
  /** Its process span's attributes and the creation contexts it links to (or, `parent`, continues). */
  trace(): { attributes: Otel.Attributes; carriers?: readonly string[]; parent?: boolean };
}

/** How a handler's run ended, as the runtime hands it to `settle`. */
export type HandlerResult = { ok: true } | { ok: false; error: unknown };

/**
 * What became of a delivery once its adapter recorded it in Redis (or found nothing to record):
 * the one value the reporter turns into the span's end, the event, the log line and `onFailed`.
 */
export type DeliveryFate =
  /** Acknowledged. */
  | { type: 'acknowledged' }
  /** Failed; delivered again at `at` (server ms). */
  | { type: 'retry'; at: number; acknowledged?: number }
  /** Failed its last attempt and dead-lettered at `at`. */
  | { type: 'dead'; at: number; acknowledged?: number }
  /** Failed its last attempt, kept at the head of `group`, which was paused at `at` (until resumed). */
  | { type: 'paused'; at: number; acknowledged?: number; group: string }
  /** Failed its last attempt, nothing kept (at-most-once; a repeat occurrence given up until `nextRunAt`). */
  | { type: 'failed'; nextRunAt?: number }
  /** No longer this consumer's: its lease ran out under the handler (or the task was cancelled). */
  | { type: 'lease-lost' }
  /** Shutdown abandoned it and gave it back. */
  | { type: 'given-back' }
  /** Nothing ran (a skipped repeat occurrence). */
  | { type: 'skipped' };

/** Work a settlement made due in the delivery's shard: at `at`, server ms (`serverNow` when known). */
export interface DueAgain {
  at: number;
  serverNow?: number;
}

/** An item handed to the slot that settled the delivery before it, and when it was claimed (server ms). */
export interface Handover<I> {
  item: I;
  claimedAt: number;
}

/** Messages of a group discarded for age (count > 0). */
export interface ExpiredMessages {
  group: string;
  count: number;
}

/**
 * What became of a delivery once recorded (its fate), what it made due again, and messages its group lost to age
 * meanwhile. `acknowledged` in a failure's fate: messages of the delivery acknowledged all the same,
 * its first (a batch handler's PartialBatchError).
 */
export interface RecordedFate {
  fate: DeliveryFate;
  due?: DueAgain;
  expired?: ExpiredMessages;
  /**
   * Part of the handler's answer the adapter could not use, and what it did instead (a PartialBatchError
   * naming no part of the batch, so none counts as handled), for a person to read: logged as an error.
   */
  ignoredAnswer?: string;
}

/** What `settle` sends to Redis: the outcome once recorded, and the next item for the slot if it asked. */
export interface Settlement<I> {
  recorded: Promise<RecordedFate>;
  next?: Promise<Handover<I> | undefined>;
}

/**
 * How a kind of queue tells what became of its deliveries: the words of its log lines and the events
 * it emits, each knowing its own delivery (as bullmq's handleCompleted / handleFailed know their job).
 * The reporter calls these and knows no kind. Each emits only when its event has listeners.
 */
export interface DeliveryReports<D> {
  /** Log lines of failures: delivered again, dead-lettered, failed for good; the field naming when next. */
  readonly words: { retry: string; nextAt: string; dead: string; failed: string };
  /** Its handler is about to run. */
  started?(events: QueueEvents, delivery: D): void;
  completed(events: QueueEvents, delivery: D, durationMs: number): void;
  /** Failed; delivered again at `nextRunAt`. */
  retry?(events: QueueEvents, delivery: D, durationMs: number, error: unknown, nextRunAt: number): void;
  dead(events: QueueEvents, delivery: D, durationMs: number, error: unknown, diedAt: number): void;
  /** Failed its last attempt, nothing kept (a repeat occurrence: the schedule goes on at `nextRunAt`). */
  failed(events: QueueEvents, delivery: D, durationMs: number, error: unknown, nextRunAt?: number): void;
}

/**
 * What a kind of queue gives the consumer runtime: how its work is claimed, opened for a handler,
 * settled, kept and given back. Built from the queue's own store; the runtime knows nothing else of it.
 */
export interface ConsumerAdapter<I, D extends OpenedDelivery> {
  /** For health reports only: the runtime does not branch on it. */
  readonly kind: QueueKind;
  /** How its deliveries' outcomes are told (events and log words). */
  readonly reports: DeliveryReports<D>;
  /** The lease a claim takes; its deliveries' leases are extended by the runtime's heartbeat. */
  readonly leaseMs: number;
  /**
   * Whether work whose lease ran out is delivered again (at-least-once). A delivery whose lease ran out
   * before its handler could start (this process was paused or starved since the claim) is then not run
   * here: whoever claimed it since runs it, and running it too would run it beside them.
   */
  readonly redeliversLapsed: boolean;
  /** In-process retries of a failed handler (at-most-once queues), under the same deadline. */
  readonly localRetries?: RetryPolicy;
  /** Claims at most `limit` items of a shard. */
  claim(shard: number, limit: number): Promise<Claimed<I>>;
  open(shard: number, item: I, claimedAt: number): D;
  /**
   * Records how the handler ended. `next`: the slot goes on with the same group, if the adapter can
   * hand its next item over with the acknowledgement.
   */
  settle(delivery: D, result: HandlerResult, next: boolean): Settlement<I>;
  /** Extends the leases of a shard's deliveries; absent when they hold none. */
  extend?(shard: number, deliveries: D[]): Promise<boolean[]>;
  /**
   * Hands back what shutdown abandoned, each counted as an attempt where `counted` says so; resolves
   * with how many went back.
   */
  giveBack(abandoned: Abandoned<D>[]): Promise<number>;
}

/**
 * A delivery shutdown abandoned. `counted`: its handler ran past handlerTimeoutMs and had not settled,
 * so the attempt counts (it ran, and its next delivery is attempt + 1; past the last one the kind's
 * exhaustion rule applies). One interrupted within its time is not counted: shutdown cut it short.
 */
export interface Abandoned<D> {
  delivery: D;
  counted: boolean;
}
