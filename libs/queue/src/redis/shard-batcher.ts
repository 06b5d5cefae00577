import type { HeldWrites } from './redis-connection';
import { notSentAtShutdown } from './redis.messages';

/** Most operations one script call carries: keeps replies and Lua's stack small. */
const MAX_ITEMS_PER_CALL = 1000;

interface Pending<I, O> {
  items: I[];
  resolvers: ((result: O) => void)[];
  rejecters: ((error: unknown) => void)[];
}

/**
 * Gathers single operations (schedules, acknowledgements) made during one turn of the event loop and
 * sends each shard's share as one script call, each caller still getting its own result. Per shard,
 * calls leave in the order the operations were made.
 */
export class ShardBatcher<I, O> implements HeldWrites {
  private pending = new Map<number, Pending<I, O>>();
  private scheduled = false;
  /** Calls on their way, for `drain` to wait on. */
  private readonly running = new Set<Promise<unknown>>();
  private closed = false;

  constructor(private readonly run: (shard: number, items: I[]) => Promise<O[]>) {}

  add(shard: number, item: I): Promise<O> {
    if (this.closed) return Promise.reject(notSentAtShutdown('call'));
    let pending = this.pending.get(shard);
    if (pending === undefined) {
      pending = { items: [], resolvers: [], rejecters: [] };
      this.pending.set(shard, pending);
    }
    pending.items.push(item);
    if (!this.scheduled) {
      this.scheduled = true;
      setImmediate(() => this.flush());
    }
    const target = pending;
    return new Promise<O>((resolve, reject) => {
      target.resolvers.push(resolve);
      target.rejecters.push(reject);
    });
  }

  /** Sends what is buffered now, so that an operation issued next cannot overtake it. */
  flush(): void {
    this.scheduled = false;
    const pending = this.pending;
    if (pending.size === 0) return;
    this.pending = new Map();
    for (const [shard, { items, resolvers, rejecters }] of pending) {
      for (let from = 0; from < items.length; from += MAX_ITEMS_PER_CALL) {
        const to = Math.min(items.length, from + MAX_ITEMS_PER_CALL);
        const running = this.run(shard, items.slice(from, to)).then(
          (results) => {
            for (let i = from; i < to; i++) resolvers[i](results[i - from]);
          },
          (error) => {
            for (let i = from; i < to; i++) rejecters[i](error);
          },
        );
        this.running.add(running);
        void running.finally(() => this.running.delete(running));
      }
    }
  }

  /** Sends what is buffered and resolves once every call has settled, operations added meanwhile included. */
  async drain(): Promise<void> {
    while (this.pending.size > 0 || this.running.size > 0) {
      this.flush();
      await Promise.allSettled(this.running);
    }
  }

  /** Refuses operations from now on and rejects those still buffered, as not sent: the connection closes. */
  close(): void {
    this.closed = true;
    const pending = this.pending;
    this.pending = new Map();
    for (const { rejecters } of pending.values()) for (const reject of rejecters) reject(notSentAtShutdown('call'));
  }
}
