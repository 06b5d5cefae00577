/**
 * Base class of every error the library throws on purpose, so callers can tell
 * "the queue refused this" (`instanceof QueueError`) from a Redis or network failure.
 */
export class QueueError extends Error {
  constructor(message: string, options?: ErrorOptions) {
    super(message, options);
    this.name = new.target.name;
  }
}

/** Options given to `forRoot` / `registerFixedQueue` / `registerDelayQueue` break a rule. */
export class QueueConfigError extends QueueError {}

/** A message, payload, group, id or time was refused before anything was written. */
export class QueueInputError extends QueueError {}

/** A message or task payload failed its `schema`; `violations` lists what is wrong. */
export class QueueSchemaError extends QueueInputError {
  constructor(
    message: string,
    readonly violations: string[],
  ) {
    super(message);
  }
}

/** A decorator, injection or lookup names a queue that was never registered. */
export class UnknownQueueError extends QueueError {}

/** A task cannot be moved in its current state (it is running, or dead-lettered). */
export class TaskStateError extends QueueError {
  constructor(
    readonly id: string,
    readonly state: 'active' | 'dead',
  ) {
    super(
      state === 'active'
        ? `Task "${id}" is running (active) and cannot be moved; schedule it again with the same id to replace it`
        : `Task "${id}" is dead-lettered and cannot be moved; requeue(id) brings it back`,
    );
  }
}

/**
 * What is known of a call that failed for want of Redis: `'not-sent'` — it never left this process
 * (Redis refused connections, the client gave up waiting for one, or its offline queue is disabled),
 * so nothing was applied and it will not be; `'unknown'` — it may have reached Redis (it timed out,
 * or the connection dropped after it was sent), so Redis may have run it.
 */
export type QueueCallOutcome = 'not-sent' | 'unknown';

/**
 * Redis could not be reached or did not answer in time (`commandTimeoutMs`). `outcome` says whether
 * the call can have been applied (after several tries: whether any of them can have been); `cause` is
 * the client's error; `tries` how many times the call was sent or attempted (more than 1 with `retryMs`).
 */
export class QueueConnectionError extends QueueError {
  readonly outcome: QueueCallOutcome;
  readonly tries: number;

  constructor(message: string, options?: ErrorOptions & { outcome?: QueueCallOutcome; tries?: number }) {
    super(message, options);
    this.outcome = options?.outcome ?? 'unknown';
    this.tries = options?.tries ?? 1;
  }
}

/**
 * Redis refused a write because it is out of memory (`OOM command not allowed when used memory >
 * 'maxmemory'`, under `maxmemory-policy noeviction`). Redis refuses before a call writes anything, so
 * nothing was applied; retrying succeeds once memory is freed (consumers drain the queues, or
 * `maxmemory` is raised). `cause` is Redis' reply.
 */
export class QueueMemoryError extends QueueError {}

/**
 * `waitForReplicas` was asked for and fewer replicas acknowledged the write in time. The write is
 * applied on the primary (and visible); only its survival of a failover is not assured.
 */
export class QueueReplicationError extends QueueError {
  constructor(
    message: string,
    readonly acknowledged: number,
    readonly required: number,
  ) {
    super(message);
  }
}

/**
 * An operation that would pull the data from under running consumers (`obliterate`) was refused:
 * `consumers` lists those of this process (`Class.method`). Stop them first (close the application,
 * or start it with `consumers: false`), or pass `{ force: true }`.
 */
export class QueueInUseError extends QueueError {
  constructor(
    message: string,
    readonly consumers: string[],
  ) {
    super(message);
  }
}

/**
 * A consumer's handler did not settle within `handlerTimeoutMs`: the reason `ctx.signal` aborts with. The
 * handler itself is not stopped, and its group or task stays held until it settles: a handler that
 * listens to its signal and rejects with this error fails its delivery with it (retried, dead-lettered
 * or given to `onFailed` like any throw).
 */
export class HandlerTimeoutError extends QueueError {
  constructor(
    readonly timeoutMs: number,
    /** What was being handled: `batch of group "g"`, `task "t"`. */
    readonly delivery: string,
  ) {
    super(`the handler of ${delivery} did not settle within ${timeoutMs} ms (handlerTimeoutMs); its signal is aborted`);
  }
}
