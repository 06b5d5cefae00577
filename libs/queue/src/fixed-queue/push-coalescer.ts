import type { PushResult } from '../interfaces';
import type { HeldWrites } from '../redis/redis-connection';
import { notSentAtShutdown } from '../redis/redis.messages';
import { LateTry, type CallKey } from '../redis/call-keys';
import { messageCount, type GroupPush, type PushReply } from './fixed-queue.store';

/** Shared result of the common case, so a push that evicts nothing allocates no result. */
const NOTHING_DROPPED: PushResult = Object.freeze({ dropped: 0 });

/**
 * How a request is settled. Only the resolver is kept (a failure resolves it with a rejected promise):
 * one function less per push held until the reply.
 */
type Settle = (result: PushResult | Promise<never>) => void;

/** Pushes buffered for one group: parallel arrays, so a push costs no object of its own. */
interface GroupBuffer {
  group: string;
  /** The lone message itself while there is one (most groups of a call have one), or all of them. */
  messages: string | string[];
  /** UTF-8 bytes of the messages: what Redis receives. */
  bytes: number;
  /** Per request, how many messages it brought; undefined while each brought one, as most groups' do. */
  counts: number[] | undefined;
  /** How to settle each request: the function alone while there is one request, as most groups have. */
  resolvers: Settle | Settle[];
  /** A keyed push (see GroupPush): its buffer holds it alone. */
  call: CallKey | undefined;
}

/**
 * A call's share of one group: its whole buffer (the common case: no object of its own, held until the
 * reply), or, when a big flush is cut, whole requests of it: [buffer, first request, end request].
 */
type Part = GroupBuffer | [GroupBuffer, number, number];

/**
 * Bounds on one script call. Redis runs one script at a time, so a long one freezes every client of
 * the server, and a call's time grows with its new groups and its bytes far more than with its
 * messages. These keep a call within a few ms (test/faults/slowlog.e2e-spec.ts; BENCHMARKS.md, "Figures behind the code": push
 * call bounds). The message bound also keeps the arguments well below Lua's unpack limit.
 * Bytes are UTF-8, as Redis receives them: a string's length counts UTF-16 units, up to three times fewer.
 */
export const MAX_MESSAGES_PER_CALL = 4000;
export const MAX_BYTES_PER_CALL = 1024 * 1024;
const MAX_GROUPS_PER_CALL = 200;
const HOLD_MS = 20;

/**
 * Gathers the pushes made during one turn of the event loop and writes them with one script call
 * per shard (several groups, several messages each), instead of one round trip per message.
 * A request is never split across calls, so `pushMany` stays one atomic write, and each resolves
 * with its own count of evictions. Measured hot path: keep allocations per push to the promise.
 */
export class PushCoalescer implements HeldWrites {
  /**
   * By shard, then group: a shard held back by its call on the way is left as it is. A keyed push's
   * buffer, and the one it closed (the group's pushes before it), are keyed by themselves: pushes after
   * it start a buffer of their own, so that the group's list takes them in order.
   */
  private readonly buffers = new Map<number, Map<string | GroupBuffer, GroupBuffer>>();
  private scheduled = false;
  /** Script calls on their way, for `drain` to wait on. */
  private readonly writing = new Set<Promise<void>>();
  /** Set once the connection is closing: a push then could never be written. */
  private closed = false;
  /**
   * Per shard, when each call on its way was sent. A shard's pushes wait for the reply of the call before
   * them and then go as one larger call: Redis' and Node's cost is mostly per group visit and per call, so
   * under load calls grow instead of multiplying (BENCHMARKS.md, "Figures behind the code": pushes in flight). They wait `HOLD_MS` at
   * most, so a slow or lost reply does not delay them past its own timeout.
   */
  private readonly inFlight = new Map<number, number[]>();
  private holdTimer: NodeJS.Timeout | undefined;
  /**
   * The resolver the promise being made handed to `capture`, taken at once by `add`: one executor for
   * every push rather than a closure (and its context) made per push.
   */
  private captured: Settle | undefined;
  private readonly capture = (resolve: Settle): void => {
    this.captured = resolve;
  };

  constructor(
    /** Writes one script call (the store's `push`, in a send span when the queue traces). */
    private readonly writeCall: (shard: number, groups: GroupPush[]) => Promise<PushReply>,
    private readonly shardOf: (group: string) => number,
    private readonly onPushed: (shard: number, reply: PushReply, sentAt: number, groups: GroupPush[]) => void,
  ) {}

  add(group: string, messages: string | string[], bytes: number, call?: CallKey): Promise<PushResult> {
    if (this.closed) return Promise.reject(notSentAtShutdown('push'));
    const promise = new Promise<PushResult>(this.capture);
    const resolve = this.captured!;
    this.captured = undefined;
    const shard = this.shardOf(group);
    let groups = this.buffers.get(shard);
    if (groups === undefined) this.buffers.set(shard, (groups = new Map()));
    const buffer = groups.get(group);
    if (call !== undefined) {
      if (buffer !== undefined) {
        groups.delete(group);
        groups.set(buffer, buffer);
      }
      const keyed: GroupBuffer = {
        group,
        messages: typeof messages === 'string' ? messages : [...messages],
        bytes,
        counts: typeof messages === 'string' ? undefined : [messages.length],
        resolvers: resolve,
        call,
      };
      groups.set(keyed, keyed);
    } else if (buffer === undefined) {
      // A group's first request (most are its only one) is kept as it came: arrays come with a second,
      // and a pushMany's is copied to size (growing arrays from empty made garbage on every push:
      // BENCHMARKS.md, "Figures behind the code": push buffers).
      groups.set(group, {
        group,
        messages: typeof messages === 'string' ? messages : [...messages],
        bytes,
        counts: typeof messages === 'string' ? undefined : [messages.length],
        resolvers: resolve,
        call: undefined,
      });
    } else {
      const held = typeof buffer.messages === 'string' ? (buffer.messages = [buffer.messages]) : buffer.messages;
      if (typeof messages === 'string') {
        held.push(messages);
        buffer.counts?.push(1);
      } else {
        for (const message of messages) held.push(message);
        (buffer.counts ??= new Array<number>(requests(buffer)).fill(1)).push(messages.length);
      }
      buffer.bytes += bytes;
      if (typeof buffer.resolvers === 'function') buffer.resolvers = [buffer.resolvers, resolve];
      else buffer.resolvers.push(resolve);
    }
    // setImmediate, not nextTick: pushes arriving from several I/O callbacks of one loop turn share a call.
    // Flushing early instead (at a message count) was measured slower: Redis' cost is mostly per group
    // per call, so the fewer, larger calls the better.
    if (!this.scheduled) this.schedule();
    return promise;
  }

  /**
   * Sends what is buffered now (`all`, so that an operation issued next, a clear, cannot overtake it),
   * or what is buffered for shards with no call on its way.
   */
  flush(all = true): void {
    const now = Date.now();
    let holdUntil = Infinity;
    for (const [shard, groups] of this.buffers) {
      const sentAt = this.inFlight.get(shard)?.[0];
      if (!all && sentAt !== undefined && now - sentAt < HOLD_MS) {
        holdUntil = Math.min(holdUntil, sentAt + HOLD_MS);
        continue;
      }
      this.buffers.delete(shard);
      let call: Part[] = [];
      let count = 0;
      let bytes = 0;
      for (const buffer of groups.values()) {
        if (call.length >= MAX_GROUPS_PER_CALL) {
          this.send(shard, call);
          call = [];
          count = 0;
          bytes = 0;
        }
        const held = messageCount(buffer.messages);
        const whole = held <= MAX_MESSAGES_PER_CALL && buffer.bytes <= MAX_BYTES_PER_CALL;
        if (whole && count + held <= MAX_MESSAGES_PER_CALL && bytes + buffer.bytes <= MAX_BYTES_PER_CALL) {
          call.push(buffer);
          count += held;
          bytes += buffer.bytes;
          continue;
        }
        // Rare: a big flush. Cut it between requests, each measured: requests are not kept with their
        // sizes (one number less per push), and an average would let a call of a few big ones and many
        // small ones grow past the bound.
        let first = 0;
        let message = 0;
        const messages = listOf(buffer.messages);
        for (let r = 0; r < requests(buffer); r++) {
          const n = countOf(buffer, r);
          let size = 0;
          for (const end = message + n; message < end; message++) size += Buffer.byteLength(messages[message]);
          if (count > 0 && (count + n > MAX_MESSAGES_PER_CALL || bytes + size > MAX_BYTES_PER_CALL)) {
            if (r > first) call.push([buffer, first, r]);
            this.send(shard, call);
            call = [];
            count = 0;
            bytes = 0;
            first = r;
          }
          count += n;
          bytes += size;
        }
        call.push(first === 0 ? buffer : [buffer, first, requests(buffer)]);
      }
      if (call.length > 0) this.send(shard, call);
    }
    if (holdUntil < Infinity && this.holdTimer === undefined) {
      this.holdTimer = setTimeout(() => {
        this.holdTimer = undefined;
        this.flush(false);
      }, holdUntil - now);
    }
  }

  /**
   * Sends everything buffered and resolves once every call has settled, pushes made meanwhile included:
   * what was accepted before the application closes is written before its connection closes.
   */
  async drain(): Promise<void> {
    while (this.buffers.size > 0 || this.writing.size > 0) {
      this.flush();
      await Promise.allSettled(this.writing);
    }
  }

  /**
   * Refuses pushes from now on and rejects those still buffered, all as not sent: the connection is about
   * to close (after `drain`, or when the shutdown budget ran out before it finished).
   */
  close(): void {
    this.closed = true;
    clearTimeout(this.holdTimer);
    this.holdTimer = undefined;
    for (const groups of this.buffers.values())
      for (const buffer of groups.values())
        for (let r = 0; r < requests(buffer); r++) settle(buffer, r, Promise.reject(notSentAtShutdown('push')));
    this.buffers.clear();
  }

  private send(shard: number, call: Part[]): void {
    const writing = this.write(shard, call).finally(() => this.writing.delete(writing));
    this.writing.add(writing);
  }

  private async write(shard: number, call: Part[]): Promise<void> {
    // A whole buffer is its own GroupPush: no object per group in the common case.
    const groups: GroupPush[] = call.some(Array.isArray)
      ? call.map((part) =>
          Array.isArray(part)
            ? {
                group: part[0].group,
                messages: listOf(part[0].messages).slice(offset(part[0], part[1]), offset(part[0], part[2])),
              }
            : part,
        )
      : (call as GroupBuffer[]);
    let reply: PushReply;
    const sentAt = Date.now();
    const sent = this.inFlight.get(shard);
    if (sent) sent.push(sentAt);
    else this.inFlight.set(shard, [sentAt]);
    try {
      reply = await this.writeCall(shard, groups);
    } catch (error) {
      eachPart(call, (buffer, first, end) => {
        for (let r = first; r < end; r++) settle(buffer, r, Promise.reject(error));
      });
      return;
    } finally {
      const sent = this.inFlight.get(shard)!;
      sent.shift();
      if (sent.length === 0) this.inFlight.delete(shard);
      if (this.buffers.size > 0 && !this.scheduled) this.schedule();
    }
    eachPart(call, (buffer, first, end, i) => {
      // A late try of a keyed push (its own request) wrote nothing.
      if (reply.late?.includes(i)) return settle(buffer, first, Promise.reject(new LateTry()));
      // Pushed one by one, each message arriving at a full group evicts one: the evictions belong to the last ones.
      let evicted = reply.evicted[i];
      for (let r = end - 1; r >= first; r--) {
        const dropped = Math.min(evicted, countOf(buffer, r));
        evicted -= dropped;
        settle(buffer, r, dropped === 0 ? NOTHING_DROPPED : { dropped });
      }
    });
    this.onPushed(shard, reply, sentAt, groups);
  }

  private schedule(): void {
    this.scheduled = true;
    setImmediate(() => {
      this.scheduled = false;
      if (!this.closed) this.flush(false);
    });
  }
}

/** Visits each part of a call as its buffer and range of requests. */
function eachPart(call: Part[], visit: (buffer: GroupBuffer, first: number, end: number, index: number) => void): void {
  for (let i = 0; i < call.length; i++) {
    const part = call[i];
    if (Array.isArray(part)) visit(part[0], part[1], part[2], i);
    else visit(part, 0, requests(part), i);
  }
}

/** A buffer's messages as a list, for the rare flush cut between its requests. */
function listOf(messages: string | string[]): string[] {
  return typeof messages === 'string' ? [messages] : messages;
}

/** Requests buffered for the group. */
function requests(buffer: GroupBuffer): number {
  return typeof buffer.resolvers === 'function' ? 1 : buffer.resolvers.length;
}

/** Settles request `r` of the group's buffer. */
function settle(buffer: GroupBuffer, r: number, result: PushResult | Promise<never>): void {
  if (typeof buffer.resolvers === 'function') buffer.resolvers(result);
  else buffer.resolvers[r](result);
}

/** Messages request `r` of the group's buffer brought. */
function countOf(buffer: GroupBuffer, r: number): number {
  return buffer.counts === undefined ? 1 : buffer.counts[r];
}

/** Index of the first message of request `r` in the group's buffer. */
function offset(buffer: GroupBuffer, r: number): number {
  if (buffer.counts === undefined) return r;
  let index = 0;
  for (let i = 0; i < r; i++) index += buffer.counts[i];
  return index;
}
