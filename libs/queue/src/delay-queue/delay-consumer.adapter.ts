import type {
  Abandoned,
  ConsumerAdapter,
  DeliveryFate,
  DeliveryReports,
  HandlerResult,
  OpenedDelivery,
  RecordedFate,
  Settlement,
} from '../consumer/consumer-adapter';
import { givenBackOverdue } from '../consumer/consumer.messages';
import { HandlerContext, LazyAbort } from '../consumer/deliveries';
import { RetryPolicy } from '../consumer/retry-policy';
import type { Claimed } from '../consumer/shard-poller';
import type { QueueEvents } from '../events/queue-events';
import type { DelayContext, RepeatOccurrence, TaskEvent } from '../interfaces';
import type { ServerClock } from '../redis/server-clock';
import { ShardBatcher } from '../redis/shard-batcher';
import { carrierAt, storedJson } from '../redis/traced-json';
import { ATTRIBUTES, type ProcessSpan } from '../tracing/queue-tracer';
import { failureText } from '../utils/errors';
import type { DelayConsumerOptionsRules } from '../validation/consumer-options';
import { occurrenceNotPlaced } from './delay-queue.messages';
import type { DelayQueue } from './delay-queue';
import type { ClaimedTask, DelayQueueStore } from './delay-queue.store';
import type { Acked } from './lua/delay-ack';
import { RepeatOccurrences, type OccurrencePlan } from './repeat-occurrences';

export type DelayHandler = (payload: unknown, ctx: DelayContext) => unknown;

export interface DelayConsumerAdapterOptions {
  /** The queue's own store, options and name. */
  queue: Pick<DelayQueue, 'name' | 'store' | 'options'>;
  clock: ServerClock;
  /** `Class.method` of the consumer. */
  label: string;
  options: DelayConsumerOptionsRules;
  handler: DelayHandler;
}

/** A task in a slot, its delivery's fencing token, and (a repeat's occurrence) what it is to do. */
export class TaskDelivery implements OpenedDelivery {
  readonly aborter = new LazyAbort();
  span?: ProcessSpan;
  attempt: number;
  readonly skip: boolean;

  constructor(
    readonly shard: number,
    readonly task: ClaimedTask,
    readonly firedAt: number,
    readonly plan: OccurrencePlan | undefined,
    private readonly adapter: DelayConsumerAdapter,
  ) {
    this.attempt = task.attempt;
    this.skip = plan?.skip !== undefined;
  }

  get id(): string {
    return this.task.id;
  }

  get token(): string {
    return this.task.token;
  }

  get what(): string {
    return `task "${this.task.id}"`;
  }

  get subject(): { id: string } {
    return { id: this.task.id };
  }

  call(): unknown {
    const { task } = this;
    const payload = JSON.parse(storedJson(task.json));
    const ctx = new Context(
      this.adapter.queue,
      task.id,
      this.attempt,
      task.dueAt,
      task.runAt,
      this.firedAt,
      this.aborter,
      this.plan?.occurrence,
    );
    return this.adapter.handler(payload, ctx);
  }

  fields(): Record<string, string> {
    const { plan } = this;
    return {
      id: this.task.id,
      ...(plan && { occurrence: new Date(plan.occurrence.occurrence).toISOString() }),
    };
  }

  event(): TaskEvent {
    const { task } = this;
    return {
      queue: this.adapter.queue,
      id: task.id,
      attempt: task.attempt,
      runAt: task.runAt,
      dueAt: task.dueAt,
      firedAt: this.firedAt,
      consumer: this.adapter.label,
    };
  }

  trace() {
    const carrier = carrierAt(this.task.json, 0);
    return {
      attributes: { 'messaging.message.id': this.task.id, [ATTRIBUTES.attempt]: this.task.attempt },
      carriers: carrier === undefined ? undefined : [carrier],
      parent: this.adapter.continuesTrace,
    };
  }
}

/** A task handler's context. */
class Context extends HandlerContext implements DelayContext {
  constructor(
    readonly queue: string,
    readonly id: string,
    readonly attempt: number,
    readonly dueAt: number,
    readonly runAt: number,
    readonly firedAt: number,
    aborter: LazyAbort,
    readonly repeat?: RepeatOccurrence,
  ) {
    super(aborter);
  }
}

/**
 * How a `@DelayConsumer` (or `@Recurring`) consumes a DelayQueue: claims due tasks under a lease;
 * resolving acknowledges, throwing retries after the backoff or dead-letters after the last attempt. A
 * repeat's occurrence ends by placing the next one; one that failed its last attempt is given up, not
 * dead-lettered, and the schedule goes on.
 */
export class DelayConsumerAdapter implements ConsumerAdapter<ClaimedTask, TaskDelivery> {
  readonly kind = 'delay';
  readonly reports = TASK_REPORTS;
  readonly queue: string;
  readonly label: string;
  readonly handler: DelayHandler;
  readonly leaseMs: number;
  readonly redeliversLapsed = true;
  /** A task's process span is a child of the context that scheduled it, not a new trace linked to it. */
  readonly continuesTrace: boolean;
  private readonly store: DelayQueueStore;
  private readonly retry: RetryPolicy;
  private readonly keepStack: boolean;
  private readonly repeats: RepeatOccurrences;
  /** Acknowledgements of one event-loop turn share one script call per shard. */
  private readonly acks: ShardBatcher<TaskDelivery, Acked>;

  constructor({ queue, clock, label, options, handler }: DelayConsumerAdapterOptions) {
    const queueOptions = queue.options;
    this.queue = queue.name;
    this.label = label;
    this.handler = handler;
    this.store = queue.store;
    this.leaseMs = queueOptions.leaseMs;
    this.continuesTrace = options.scheduleContext === 'parent';
    this.retry = new RetryPolicy(queueOptions.maxAttempts, queueOptions.backoff);
    this.keepStack = queueOptions.deadLetter.keepStack;
    this.repeats = new RepeatOccurrences(this.store, clock);
    this.acks = new ShardBatcher((shard, deliveries) => this.store.ack(shard, deliveries));
  }

  async claim(shard: number, limit: number): Promise<Claimed<ClaimedTask>> {
    const claimed = await this.store.claim(shard, limit);
    return { poll: claimed, items: claimed.tasks };
  }

  open(shard: number, task: ClaimedTask, firedAt: number): TaskDelivery {
    const plan = task.repeat === undefined ? undefined : this.repeats.plan(task, firedAt, this.retry.maxAttempts);
    return new TaskDelivery(shard, task, firedAt, plan, this);
  }

  settle(running: TaskDelivery, result: HandlerResult): Settlement<ClaimedTask> {
    return { recorded: this.record(running, result) };
  }

  extend(shard: number, deliveries: TaskDelivery[]): Promise<boolean[]> {
    return this.store.extend(shard, deliveries);
  }

  /**
   * Tasks that shutdown abandoned are due again at once instead of waiting out their lease, counted as
   * an attempt where the handler was past handlerTimeoutMs (see delay-release.lua).
   */
  async giveBack(abandoned: Abandoned<TaskDelivery>[]): Promise<number> {
    const error = givenBackOverdue(this.label);
    const released = await Promise.all(
      abandoned.map(({ delivery: { shard, id, token }, counted }) =>
        this.store.release(shard, id, token, counted, error).catch(() => false),
      ),
    );
    return released.filter(Boolean).length;
  }

  private async record(running: TaskDelivery, result: HandlerResult): Promise<RecordedFate> {
    const { plan } = running;
    if (plan?.skip) {
      const error = plan.skip === 'failed' ? 'its last attempt ran out of lease' : '';
      return this.endOccurrence(running, plan, plan.skip, error, { type: 'skipped' });
    }
    if (result.ok) {
      if (plan) return this.endOccurrence(running, plan, 'completed', '', { type: 'acknowledged' });
      const { completed, successorAt } = await this.acks.add(running.shard, running);
      if (!completed) return { fate: { type: 'lease-lost' } };
      // Scheduled again while it ran: the new version is due now that this run is done.
      return { fate: { type: 'acknowledged' }, ...(successorAt !== undefined && { due: { at: successorAt } }) };
    }
    const text = failureText(result.error, this.keepStack);
    // An occurrence that failed its last attempt is given up: the schedule goes on with its next tick.
    if (plan && this.retry.exhausted(running.attempt)) {
      const ended = await this.endOccurrence(running, plan, 'failed', text, { type: 'failed' });
      return ended.due ? { ...ended, fate: { type: 'failed', nextRunAt: ended.due.at } } : ended;
    }
    const { shard, id, token } = running;
    const failed = await this.store.fail(shard, id, token, this.retry.delayAfter(running.attempt), text);
    // Null: the lease was lost meanwhile (the task was replaced, cancelled, or went to another worker).
    if (!failed) return { fate: { type: 'lease-lost' } };
    if (failed.fate === 'dead') return { fate: { type: 'dead', at: failed.at } };
    return { fate: { type: 'retry', at: failed.at }, due: { at: failed.at } };
  }

  /** Ends an occurrence of a repeat and places the next. */
  private async endOccurrence(
    running: TaskDelivery,
    plan: OccurrencePlan,
    outcome: 'completed' | 'failed' | 'skipped',
    error: string,
    done: DeliveryFate,
  ): Promise<RecordedFate> {
    const ended = await this.repeats.end(running.shard, running.task, plan, outcome, error);
    if (ended.status === 'fenced') return { fate: { type: 'lease-lost' } };
    if (ended.status === 'clock' || ended.status === 'changed') throw occurrenceNotPlaced(running.id, ended.status);
    return { fate: done, ...(ended.status === 'next' && { due: { at: ended.nextRunAt } }) };
  }
}

/**
 * What a task's outcomes say: `task.fired` as its handler starts, and a failure as `task.failed` while
 * it runs again (a retry, or a repeat's next occurrence), `task.dead` once dead-lettered.
 */
const TASK_REPORTS: DeliveryReports<TaskDelivery> = {
  words: {
    retry: 'task failed, will retry',
    nextAt: 'nextRunAt',
    dead: 'task failed its last attempt and is dead-lettered',
    failed: 'repeat occurrence failed its last attempt; the schedule goes on',
  },
  started(events, task) {
    if (events.has('task.fired')) events.emit('task.fired', task.event());
  },
  completed(events, task, durationMs) {
    if (events.has('task.completed')) events.emit('task.completed', { ...task.event(), durationMs });
  },
  retry: taskFailed,
  dead(events, task, durationMs, error, diedAt) {
    if (events.has('task.dead')) events.emit('task.dead', { ...task.event(), durationMs, error, diedAt });
  },
  failed: taskFailed,
};

/** Failed, with a next run (a retry, or a repeat's next occurrence); a failure with none has no event. */
function taskFailed(
  events: QueueEvents,
  task: TaskDelivery,
  durationMs: number,
  error: unknown,
  nextRunAt?: number,
): void {
  if (nextRunAt !== undefined && events.has('task.failed'))
    events.emit('task.failed', { ...task.event(), durationMs, error, nextRunAt });
}
