/**
 * One task a `@TaskSource` lists: the task that should exist under `id`, due at `runAt` (a Date, epoch
 * ms or ISO string) or `delayMs` from now (Redis time); neither means now.
 */
export interface SourcedTask<T = unknown> {
  id: string;
  runAt?: Date | number | string;
  delayMs?: number;
  payload: T;
}

/** What a `@TaskSource` method returns: its tasks, streamed (a generator over a database cursor). */
export type TaskSourceRows<T = unknown> = AsyncIterable<SourcedTask<T>> | Iterable<SourcedTask<T>>;

/** Why a pass of a task source ran. */
export type ReconcileTrigger = 'record-created' | 'data-lost' | 'write-failed' | 'schedule' | 'call';

/** What one pass of a task source did (`DelayQueue.reconcile`). */
export interface ReconcileResult {
  /** Tasks the source listed, invalid ones included. */
  listed: number;
  /** Listed tasks written to Redis: missing ones, and those `onExists` replaced. */
  restored: number;
  /** Listed tasks left as Redis held them. */
  kept: number;
  /** Scheduled tasks cancelled because the pass did not list them (`sweep`). */
  swept: number;
  /** Listed tasks refused (bad id, time or payload): logged with their id, skipped. */
  invalid: number;
  durationMs: number;
}

/** The last pass of a queue's task source, as health and the dashboard show it (any process's). */
export interface ReconcilePass extends ReconcileResult {
  trigger: ReconcileTrigger;
  /** When it ended, epoch ms. */
  at: number;
}
