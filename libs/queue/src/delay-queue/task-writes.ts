import { TaskStateError } from '../errors';
import type { QueueEvents } from '../events/queue-events';
import type { ScheduledTask } from '../interfaces';
import type { CallKey } from '../redis/call-keys';
import type { ServerClock } from '../redis/server-clock';
import { ShardBatcher } from '../redis/shard-batcher';
import { jsonFrom, withCarrier } from '../redis/traced-json';
import type { WakeHints } from '../redis/wake-hints';
import { CreationContexts } from '../tracing/creation-contexts';
import { MESSAGE_COUNT, type QueueTracer } from '../tracing/queue-tracer';
import type { ResolvedTime } from '../validation/time';
import type {
  DelayQueueStore,
  Placement,
  ScheduleItem,
  ScheduleItemResult,
  DelayScheduleReply,
} from './delay-queue.store';

/**
 * Payload bytes (UTF-8, as Redis receives them) one schedule call carries, as for pushes: Redis runs one
 * script at a time, and a call's time grows with its bytes (ShardBatcher bounds its tasks).
 */
const MAX_SCHEDULE_BYTES = 1024 * 1024;

export interface TaskWritesDeps {
  queue: string;
  store: DelayQueueStore;
  hints: WakeHints;
  clock: ServerClock;
  events: QueueEvents;
  /** Tracing on: each task carries its creation context (a move replaces it); each call is a span. */
  tracer: QueueTracer | undefined;
}

/**
 * The writes of a DelayQueue that place a task at a time: schedules (those of one event-loop turn share
 * one script call per shard, as pushes do), moves and re-queues. Each wakes the sleeping pollers, in any
 * process, when a task became its shard's earliest.
 */
export class TaskWrites {
  /** Schedules waiting for the end of the turn: held by the connection until they are sent. */
  readonly batcher: ShardBatcher<ScheduleItem, ScheduleItemResult>;

  constructor(private readonly deps: TaskWritesDeps) {
    this.batcher = new ShardBatcher((shard, items) => this.scheduleBatch(shard, items));
  }

  schedule(shard: number, item: ScheduleItem): Promise<ScheduleItemResult> {
    return this.batcher.add(shard, item);
  }

  /** A task's JSON as stored: with its creation context when the queue is traced. */
  stored(json: string): string {
    const carrier = this.deps.tracer?.creation();
    return carrier === undefined ? json : withCarrier(carrier, json);
  }

  /** Sends the turn's schedules now: a call made after them (a move, a read) finds them written. */
  flush(): void {
    this.batcher.flush();
  }

  /** Moves a scheduled task; null when there is none, TaskStateError when it is running or dead. */
  async move(
    operation: 'reschedule' | 'shift',
    shard: number,
    id: string,
    mode: 'at' | 'in' | 'by',
    ms: number,
    call: CallKey | undefined,
  ): Promise<ScheduledTask | null> {
    this.flush();
    const { store, hints, tracer } = this.deps;
    const placed = await hints.after(
      shard,
      tracer === undefined
        ? store.move(shard, id, mode, ms, undefined, call)
        : tracer.sendOne(operation, { 'messaging.message.id': id }, (carrier) =>
            store.move(shard, id, mode, ms, carrier, call),
          ),
    );
    if (placed === 'missing') return null;
    if (typeof placed === 'string') throw new TaskStateError(id, placed);
    this.hint(shard, placed);
    return { id, runAt: placed.runAt };
  }

  /** Brings a dead task back at `time`; null when it is not dead. */
  async requeue(shard: number, id: string, time: ResolvedTime): Promise<ScheduledTask | null> {
    this.flush();
    const placed = await this.deps.hints.after(shard, this.deps.store.requeue(shard, id, time));
    if (!placed) return null;
    this.hint(shard, placed);
    return { id, runAt: placed.runAt };
  }

  /** Wakes sleeping pollers (in any process) when a task became its shard's earliest. */
  hint(shard: number, placed: Placement): void {
    if (placed.isHead) this.deps.hints.publish(shard, placed.runAt, placed.serverNow);
  }

  /** A turn's schedules for one shard, in calls of at most MAX_SCHEDULE_BYTES of payloads each, in order. */
  private async scheduleBatch(shard: number, items: ScheduleItem[]): Promise<ScheduleItemResult[]> {
    const calls: ScheduleItem[][] = [];
    let call: ScheduleItem[] = [];
    let bytes = 0;
    for (const item of items) {
      const size = Buffer.byteLength(item.json);
      if (call.length > 0 && bytes + size > MAX_SCHEDULE_BYTES) {
        calls.push(call);
        call = [];
        bytes = 0;
      }
      call.push(item);
      bytes += size;
    }
    calls.push(call);
    if (calls.length === 1) return this.scheduleCall(shard, items);
    return (await Promise.all(calls.map((each) => this.scheduleCall(shard, each)))).flat();
  }

  private async scheduleCall(shard: number, items: ScheduleItem[]): Promise<ScheduleItemResult[]> {
    const { store, hints, clock, events, tracer, queue } = this.deps;
    const sentAt = Date.now();
    const { serverNow, head, results } = await hints.after(
      shard,
      tracer === undefined ? store.schedule(shard, items) : this.sendTraced(tracer, shard, items),
    );
    clock.observe(serverNow, sentAt);
    if (results.some((result) => result.changed && result.runAt === head))
      this.hint(shard, { runAt: head, serverNow, isHead: true });
    if (events.has('tasks.scheduled'))
      events.emit('tasks.scheduled', { queue, count: results.filter((result) => result.changed).length });
    return results;
  }

  /** One schedule call of a traced queue: its send span, linked to the creation contexts of its tasks. */
  private sendTraced(tracer: QueueTracer, shard: number, items: ScheduleItem[]): Promise<DelayScheduleReply> {
    const origins = new CreationContexts();
    for (const item of items) origins.add(item.json);
    return tracer.send('send', origins, { [MESSAGE_COUNT]: origins.count }, (carrier) => {
      // Tasks scheduled outside any trace carry this span's context.
      if (carrier !== undefined)
        for (const item of items) if (jsonFrom(item.json, 0) === 0) item.json = withCarrier(carrier, item.json);
      return this.deps.store.schedule(shard, items);
    });
  }
}
