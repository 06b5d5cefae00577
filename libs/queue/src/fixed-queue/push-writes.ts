import type { QueueEvents } from '../events/queue-events';
import { shardOf } from '../redis/keys';
import type { ServerClock } from '../redis/server-clock';
import type { WakeHints } from '../redis/wake-hints';
import { CreationContexts } from '../tracing/creation-contexts';
import { MESSAGE_COUNT, type QueueTracer } from '../tracing/queue-tracer';
import { messageCount, type FixedQueueStore, type GroupPush, type PushReply } from './fixed-queue.store';
import { PushCoalescer } from './push-coalescer';

export interface PushWritesOptions {
  queue: string;
  shards: number;
  store: FixedQueueStore;
  hints: WakeHints;
  clock: ServerClock;
  events: QueueEvents;
  /** The queue traces: each script call is a send span. */
  tracer?: QueueTracer;
}

/**
 * How a FixedQueue's pushes reach Redis: gathered into one script call per shard, each a send span when
 * the queue traces, its shard's consumers woken after it; and what each reply tells: the server's clock,
 * the consumers of every process (a group due earlier), the events.
 */
export function pushWrites({ queue, shards, store, hints, clock, events, tracer }: PushWritesOptions): PushCoalescer {
  return new PushCoalescer(
    tracer === undefined
      ? (shard, groups) => hints.after(shard, store.push(shard, groups))
      : (shard, groups) => hints.after(shard, sendTraced(store, tracer, shard, groups)),
    (group) => shardOf(group, shards),
    (shard, reply, sentAt, groups) => {
      clock.observe(reply.serverNow, sentAt);
      // A group became due earlier: consumers asleep in any process must know.
      if (reply.wakeAt >= 0) hints.publish(shard, reply.wakeAt, reply.serverNow);
      if (events.has('messages.pushed') || events.has('messages.dropped')) report(events, queue, reply, groups);
    },
  );
}

/** One script call of a traced queue: its send span, linked to the creation contexts of its messages. */
function sendTraced(store: FixedQueueStore, tracer: QueueTracer, shard: number, groups: GroupPush[]) {
  const origins = new CreationContexts();
  for (const { messages } of groups) {
    if (typeof messages === 'string') origins.add(messages);
    else for (const message of messages) origins.add(message);
  }
  return tracer.send('send', origins, { [MESSAGE_COUNT]: origins.count }, (carrier) =>
    store.push(shard, groups, carrier),
  );
}

/** Once per script call, not per push: what a write stored and evicted. */
function report(events: QueueEvents, queue: string, reply: PushReply, groups: GroupPush[]): void {
  const dropEvents = events.has('messages.dropped');
  let count = 0;
  let dropped = 0;
  for (let i = 0; i < groups.length; i++) {
    if (reply.late?.includes(i)) continue;
    count += messageCount(groups[i].messages);
    const evicted = reply.evicted[i];
    if (evicted === 0) continue;
    dropped += evicted;
    if (dropEvents) events.emit('messages.dropped', { queue, group: groups[i].group, count: evicted });
  }
  events.emit('messages.pushed', { queue, count, dropped });
}
