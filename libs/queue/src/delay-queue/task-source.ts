import type { QueueEvents } from '../events/queue-events';
import type { ReconcileCallOptions } from '../interfaces';
import type { QueueRecord } from '../redis/queue-meta';
import type { DelayQueueStore, DelayScheduleReply } from './delay-queue.store';
import { notIterable } from './task-source.messages';

/** A `@TaskSource` method, bound to its instance. */
export interface TaskSourceMethod {
  /** `Class.method`. */
  label: string;
  list: () => unknown;
}

/** What a reconciler needs of its DelayQueue. */
export interface ReconcilePort {
  queue: string;
  shards: number;
  store: DelayQueueStore;
  record: QueueRecord;
  events: QueueEvents;
  defaults: ReconcileCallOptions | undefined;
  /** Has `owed` called whenever another process announces a pass owed, and when such news may have been missed. */
  listen(owed: () => void): void;
  /** Tells every process with a source that a pass is owed. */
  announce(): void;
  /** A payload as the queue stores it: JSON, checked against its schema and size limit (throws QueueInputError). */
  encode(payload: unknown): string;
  shardOf(id: string): number;
  /** A write landed: the queue observes the clock and wakes consumers when a shard's head moved. */
  written(shard: number, reply: DelayScheduleReply, sentAt: number): void;
}

/** What the source method returned, as something `for await` reads; refused when it is neither kind of iterable. */
export function iterable(source: TaskSourceMethod): AsyncIterable<unknown> | Iterable<unknown> {
  const rows = source.list();
  if (rows !== null && typeof rows === 'object') {
    if (Symbol.asyncIterator in rows) return rows as AsyncIterable<unknown>;
    if (Symbol.iterator in rows) return rows as Iterable<unknown>;
  }
  const got = rows instanceof Promise ? 'a Promise' : rows === null ? 'null' : typeof rows;
  throw notIterable(source.label, got);
}
