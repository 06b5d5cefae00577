import type { Type } from '@nestjs/common';

export type SchemaClass = Type<object>;

/**
 * How long to wait before the next attempt of a failed delivery: the words of every retry (both queues,
 * `@Recurring`, `@BatchConsumer`'s in-process attempts).
 */
export interface BackoffOptions {
  type: 'fixed' | 'exponential';
  /** Delay before the first retry; exponential doubles it for each further attempt. 0 to 2^31 - 1 ms (about 24.8 days). */
  delayMs: number;
  /** Upper bound of an exponential delay, at most 2^31 - 1 ms. Default: `QUEUE_DEFAULTS.delayQueue.backoff.maxDelayMs`. */
  maxDelayMs?: number;
}

export interface DeadLetterOptions {
  /** Dead tasks or dead batches kept, per shard; the oldest are deleted beyond it. */
  capacity?: number;
  /**
   * Keep the error's stack as `lastError` rather than its name and message. Off by default: a stack
   * holds the server's file paths, and the dashboard shows `lastError` to whoever may open it.
   */
  keepStack?: boolean;
}

export interface ReplicaWaitOptions {
  /** Replicas that must acknowledge each write. */
  replicas: number;
  /** How long to wait for them; fewer in time fails the call with QueueReplicationError. */
  timeoutMs: number;
}

/**
 * The options both kinds of queue take, with the same meaning and the same bounds (`FixedQueueOptions`
 * and `DelayQueueOptions` extend it); their defaults are the same too, under `QUEUE_DEFAULTS.fixedQueue`
 * and `QUEUE_DEFAULTS.delayQueue`.
 */
export interface QueueBaseOptions {
  /** Queue name: letters, digits, `.`, `_`, `-`; at most 100 characters. */
  name: string;
  /** Independent sub-queues (and Cluster hash slots) the messages or tasks are spread over: 1 to 16,384. Default: 8. */
  shards?: number;
  /**
   * Lease of a claimed delivery (a DelayQueue's task, an ordered FixedQueue's group): neither acknowledged
   * nor extended within it (a running handler's consumer extends it every third of it), it is delivered
   * again (attempt + 1), to another consumer if need be. 100 ms to a day. Default: 30 s.
   */
  leaseMs?: number;
  /**
   * Deliveries of a task, or of a batch of an at-least-once FixedQueue, before it goes to the dead
   * letters: 1 to 1,000. Default: 5.
   */
  maxAttempts?: number;
  /** Wait before a failed task or batch is delivered again. Default: exponential from 1 s, at most 1 h. */
  backoff?: BackoffOptions;
  /** Dead tasks or batches kept per shard, and what they keep of their last error. Default: 10,000, no stack. */
  deadLetter?: DeadLetterOptions;
  /** class-validator class every message or payload must satisfy; invalid ones throw and write nothing. */
  schema?: SchemaClass;
  /** OpenTelemetry spans for this queue's writes and deliveries (see docs/tracing.md). Default: the module's `tracing`. */
  tracing?: boolean;
  /** Size limit of one serialised message or payload; defaults to the module's `maxPayloadBytes`. */
  maxPayloadBytes?: number;
  /** Writes resolve only once this many replicas hold them (Redis WAIT); see README "Guarantees". Default: off. */
  waitForReplicas?: ReplicaWaitOptions;
}

/** Options of both queues left unset when not given: no default applies. */
type UnsetQueueBaseOptions = 'maxPayloadBytes' | 'tracing' | 'schema' | 'waitForReplicas';

/**
 * The options both queues share, as a queue runs with them: every default applied. Absent unless given:
 * `maxPayloadBytes` and `tracing` (the module's apply), `schema`, `waitForReplicas`.
 */
export interface ResolvedQueueBaseOptions
  extends
    Required<Omit<QueueBaseOptions, 'backoff' | 'deadLetter' | UnsetQueueBaseOptions>>,
    Pick<QueueBaseOptions, UnsetQueueBaseOptions> {
  backoff: Required<BackoffOptions>;
  deadLetter: Required<DeadLetterOptions>;
}
