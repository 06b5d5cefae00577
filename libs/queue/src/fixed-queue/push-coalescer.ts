import type { FixedQueueStore, GroupPush, PushOutcome } from './fixed-queue.store';

interface Request {
  messages: string[];
  bytes: number;
  resolve(dropped: number): void;
  reject(error: unknown): void;
}

interface Part {
  push: GroupPush;
  requests: Request[];
}

/** Keeps one script call's arguments well below Lua's unpack limit and Redis' argument buffers. */
export const MAX_MESSAGES_PER_CALL = 4000;
const MAX_BYTES_PER_CALL = 4 * 1024 * 1024;

/**
 * Gathers the pushes made during one turn of the event loop and writes them with one script call
 * per shard (several groups, several messages each), instead of one round trip per message.
 * A request is never split across calls, so `pushMany` stays one atomic write, and each resolves
 * with its own count of evictions.
 */
export class PushCoalescer {
  private buffers = new Map<number, Map<string, Request[]>>();
  private scheduled = false;

  constructor(
    private readonly store: FixedQueueStore,
    private readonly onPushed: (shard: number, outcome: PushOutcome) => void,
  ) {}

  add(shard: number, group: string, messages: string[], bytes: number): Promise<number> {
    return new Promise<number>((resolve, reject) => {
      let groups = this.buffers.get(shard);
      if (!groups) {
        groups = new Map();
        this.buffers.set(shard, groups);
      }
      let requests = groups.get(group);
      if (!requests) {
        requests = [];
        groups.set(group, requests);
      }
      requests.push({ messages, bytes, resolve, reject });
      if (!this.scheduled) {
        this.scheduled = true;
        // setImmediate, not nextTick: pushes arriving from several I/O callbacks of one loop turn share a call.
        setImmediate(() => this.flush());
      }
    });
  }

  private flush(): void {
    this.scheduled = false;
    const buffers = this.buffers;
    this.buffers = new Map();
    for (const [shard, groups] of buffers) {
      for (const chunk of this.chunks(shard, groups)) void this.write(shard, chunk);
    }
  }

  private *chunks(shard: number, groups: Map<string, Request[]>): Generator<Part[]> {
    let chunk: Part[] = [];
    let count = 0;
    let bytes = 0;
    for (const [group, requests] of groups) {
      let part: Part | undefined;
      for (const request of requests) {
        if (chunk.length > 0 && (count + request.messages.length > MAX_MESSAGES_PER_CALL || bytes + request.bytes > MAX_BYTES_PER_CALL)) {
          yield chunk;
          chunk = [];
          count = 0;
          bytes = 0;
          part = undefined;
        }
        if (!part) {
          part = { push: { group, key: this.store.groupKey(shard, group), messages: [] }, requests: [] };
          chunk.push(part);
        }
        for (const message of request.messages) part.push.messages.push(message);
        part.requests.push(request);
        count += request.messages.length;
        bytes += request.bytes;
      }
    }
    if (chunk.length > 0) yield chunk;
  }

  private async write(shard: number, chunk: Part[]): Promise<void> {
    let outcome: PushOutcome;
    try {
      outcome = await this.store.push(shard, chunk.map((part) => part.push));
    } catch (error) {
      for (const part of chunk) for (const request of part.requests) request.reject(error);
      return;
    }
    chunk.forEach((part, i) => {
      // Pushed one by one, each message arriving at a full group evicts one: the evictions belong to the last ones.
      let evicted = outcome.evicted[i];
      for (let r = part.requests.length - 1; r >= 0; r--) {
        const request = part.requests[r];
        const dropped = Math.min(evicted, request.messages.length);
        evicted -= dropped;
        request.resolve(dropped);
      }
    });
    this.onPushed(shard, outcome);
  }
}
