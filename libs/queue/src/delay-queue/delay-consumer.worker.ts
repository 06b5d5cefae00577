import { ABANDONED, LazyAbort, type RunningDelivery } from '../consumer/deliveries';
import { QueueConsumer, type ConsumerDependencies } from '../consumer/queue-consumer';
import type { Claimed } from '../consumer/shard-poller';
import type { DelayContext, RepeatOccurrence, TaskFiredEvent } from '../interfaces';
import { ShardBatcher } from '../redis/shard-batcher';
import { describeError, failureText } from '../utils/errors';
import { logLine } from '../utils/log-line';
import type { DelayConsumerOptionsRules, DelayQueueOptionsRules } from '../validation/queue-options';
import { carrierAt, storedJson } from '../redis/traced-json';
import { ATTRIBUTES, overdueHook, type ProcessSpan, type QueueTracer } from '../tracing/queue-tracer';
import { DelayQueueStore, type ClaimedTask } from './delay-queue.store';
import type { AdvanceOutcome } from '../redis/lua/delay-advance';
import { RepeatOccurrences, type OccurrencePlan } from './repeat-occurrences';

export type DelayHandler = (payload: unknown, ctx: DelayContext) => unknown;

export interface DelayConsumerDependencies extends ConsumerDependencies {
  /** The queue's options: its layout, lease and retries. */
  queueOptions: DelayQueueOptionsRules;
  options: DelayConsumerOptionsRules;
  handler: DelayHandler;
  /** The queue is traced: a process span per task. */
  tracer?: QueueTracer;
}

/** A task being handled, and its delivery's fencing token. */
class RunningTask implements RunningDelivery {
  readonly aborter = new LazyAbort();

  constructor(
    readonly shard: number,
    readonly id: string,
    readonly token: string,
  ) {}

  get what(): string {
    return `task "${this.id}"`;
  }

  get subject(): { id: string } {
    return { id: this.id };
  }
}

/** A handler's context; its signal is made when first asked for. */
class Context implements DelayContext {
  constructor(
    readonly queue: string,
    readonly id: string,
    readonly attempt: number,
    readonly runAt: number,
    readonly firedAt: number,
    private readonly aborter: LazyAbort,
    readonly repeat?: RepeatOccurrence,
  ) {}

  get signal(): AbortSignal {
    return this.aborter.signal;
  }
}

/**
 * Runs one `@DelayConsumer` method: claims due tasks, extends their lease while the handler runs (also
 * past `handlerTimeoutMs`, which frees the slot, not the task), acknowledges on success and fails (retry
 * or dead-letter) on a throw.
 */
export class DelayConsumerWorker extends QueueConsumer<ClaimedTask, RunningTask> {
  readonly kind = 'delay';
  private readonly store: DelayQueueStore;
  /** Acknowledgements of one event-loop turn share one script call per shard. */
  private readonly acks: ShardBatcher<{ id: string; token: string }, boolean>;
  private readonly queueOptions: DelayQueueOptionsRules;
  private readonly handler: DelayHandler;
  private readonly tracer: QueueTracer | undefined;
  private readonly options: DelayConsumerOptionsRules;
  private readonly repeats: RepeatOccurrences;

  constructor(deps: DelayConsumerDependencies) {
    const { queueOptions, options } = deps;
    const store = new DelayQueueStore(deps.connection.scripts, deps.keys, queueOptions);
    super(deps, { leaseMs: queueOptions.visibilityTimeoutMs, extend: (shard, tasks) => store.extend(shard, tasks) });
    this.store = store;
    this.queueOptions = queueOptions;
    this.handler = deps.handler;
    this.tracer = deps.tracer;
    this.options = options;
    this.acks = new ShardBatcher((shard, deliveries) => this.store.ack(shard, deliveries));
    this.repeats = new RepeatOccurrences(store, deps.connection.clock);
  }

  taskEnded(id: string, reason: Error): void {
    for (const task of this.deliveries.current()) if (task.id === id) task.aborter.abort(reason);
  }

  protected async claim(shard: number, limit: number): Promise<Claimed<ClaimedTask>> {
    const outcome = await this.store.claim(shard, limit);
    return { outcome, items: outcome.tasks };
  }

  protected async handle(shard: number, task: ClaimedTask, firedAt: number, free: () => void): Promise<void> {
    const plan =
      task.repeat === undefined ? undefined : this.repeats.plan(task, firedAt, this.queueOptions.maxAttempts);
    const running = new RunningTask(shard, task.id, task.token);
    const ctx = new Context(this.queue, task.id, task.attempt, task.runAt, firedAt, running.aborter, plan?.occurrence);
    const { events } = this;
    if (plan?.skip) {
      const error = plan.skip === 'failed' ? 'its last attempt ran out of lease' : '';
      this.record('ack', this.endOccurrence(shard, task, plan, plan.skip, error), running);
      return;
    }
    if (events.has('task.fired')) events.emit('task.fired', this.describeTask(task, firedAt));
    const span = this.span(task);
    const started = performance.now();
    try {
      await this.deliveries.run(
        running,
        () => {
          const payload = JSON.parse(storedJson(task.json));
          return span ? span.run(() => this.handler(payload, ctx)) : this.handler(payload, ctx);
        },
        overdueHook(span, free),
      );
    } catch (error) {
      if (error === ABANDONED) return span?.end('abandoned');
      span?.failed(error);
      const durationMs = performance.now() - started;
      const failing =
        plan && task.attempt >= this.queueOptions.maxAttempts
          ? this.giveUpOccurrence(shard, task, plan, firedAt, durationMs, error)
          : this.fail(shard, task, firedAt, durationMs, error, span);
      this.record('fail', span ? failing.finally(() => span.end('failed')) : failing, running);
      return;
    }
    span?.end('ack');
    const durationMs = performance.now() - started;
    let outcome: Promise<unknown> = plan
      ? this.endOccurrence(shard, task, plan, 'completed').then((ended) => ended.status !== 'fenced')
      : this.acks.add(shard, { id: task.id, token: task.token });
    if (events.has('task.completed')) {
      outcome = outcome.then((completed) => {
        if (completed) events.emit('task.completed', { ...this.describeTask(task, firedAt), durationMs });
      });
    }
    this.record('ack', outcome, running);
  }

  /** Ends an occurrence of a repeat and places the next. */
  private async endOccurrence(
    shard: number,
    task: ClaimedTask,
    plan: OccurrencePlan,
    outcome: 'completed' | 'failed' | 'skipped',
    error?: string,
  ): Promise<AdvanceOutcome> {
    const ended = await this.repeats.end(shard, task, plan, outcome, error);
    if (ended.status === 'next') this.dueAt(shard, ended.nextRunAt);
    if (ended.status === 'clock' || ended.status === 'changed')
      throw new Error(
        `the next occurrence of repeat "${task.id}" could not be placed (${ended.status}); it is retried`,
      );
    return ended;
  }

  /**
   * An occurrence that failed its last attempt is given up, not dead-lettered: the schedule goes on
   * with its next tick, and the failure is logged and reported (`task.failed`, due at that tick).
   */
  private async giveUpOccurrence(
    shard: number,
    task: ClaimedTask,
    plan: OccurrencePlan,
    firedAt: number,
    durationMs: number,
    error: unknown,
  ): Promise<void> {
    const text = failureText(error, this.queueOptions.deadLetter.keepStack);
    const ended = await this.endOccurrence(shard, task, plan, 'failed', text);
    if (ended.status === 'fenced') return;
    const nextRunAt = ended.status === 'next' ? ended.nextRunAt : undefined;
    this.logger.error(
      logLine(this.label, 'repeat occurrence failed its last attempt; the schedule goes on', {
        id: task.id,
        occurrence: new Date(plan.occurrence.occurrence).toISOString(),
        attempt: task.attempt,
        ...(nextRunAt !== undefined && { nextRunAt: new Date(nextRunAt).toISOString() }),
        error: describeError(error),
      }),
    );
    if (nextRunAt !== undefined && this.events.has('task.failed'))
      this.events.emit('task.failed', { ...this.describeTask(task, firedAt), durationMs, error, nextRunAt });
  }

  /** Tasks that shutdown abandoned are due again at once instead of waiting out their lease. */
  protected async giveBack(abandoned: RunningTask[]): Promise<number> {
    const released = await Promise.all(
      abandoned.map(({ shard, id, token }) => this.store.release(shard, id, token).catch(() => false)),
    );
    return released.filter(Boolean).length;
  }

  private async fail(
    shard: number,
    task: ClaimedTask,
    firedAt: number,
    durationMs: number,
    error: unknown,
    span: ProcessSpan | undefined,
  ): Promise<void> {
    const text = failureText(error, this.queueOptions.deadLetter.keepStack);
    const result = await this.store.fail(shard, task.id, task.token, this.retryDelay(task.attempt), text);
    // Null: the lease was lost meanwhile (the task was replaced, cancelled, or went to another worker).
    if (!result) return span?.leaseLost();
    const { events } = this;
    if (result.outcome === 'dead') {
      span?.event('dead_letter');
      span?.end('dead');
      this.logger.error(
        logLine(this.label, 'task failed its last attempt and is dead-lettered', {
          id: task.id,
          attempt: task.attempt,
          error: describeError(error),
        }),
      );
      if (events.has('task.dead'))
        events.emit('task.dead', { ...this.describeTask(task, firedAt), durationMs, error, diedAt: result.at });
    } else {
      // The retry is due in this shard after the poller computed its sleep (up to idlePollMs): wake it then.
      this.dueAt(shard, result.at);
      const nextRunAt = new Date(result.at).toISOString();
      span?.event('retry', { 'messaging.nestjs_redis_queues.next_attempt_at': nextRunAt });
      span?.end('retry');
      this.logger.warn(
        logLine(this.label, 'task failed, will retry', {
          id: task.id,
          attempt: task.attempt,
          nextRunAt,
          error: describeError(error),
        }),
      );
      if (events.has('task.failed'))
        events.emit('task.failed', { ...this.describeTask(task, firedAt), durationMs, error, nextRunAt: result.at });
    }
  }

  /** A traced queue's process span of a task, linked to (or a child of) the operation that scheduled it. */
  private span(task: ClaimedTask): ProcessSpan | undefined {
    if (!this.tracer) return undefined;
    const carrier = carrierAt(task.json, 0);
    return this.tracer.process(
      { 'messaging.message.id': task.id, [ATTRIBUTES.attempt]: task.attempt },
      carrier === undefined ? undefined : [carrier],
      this.options.scheduleContext === 'parent',
    );
  }

  private describeTask(task: ClaimedTask, firedAt: number): TaskFiredEvent {
    return {
      queue: this.queue,
      id: task.id,
      attempt: task.attempt,
      runAt: task.runAt,
      firedAt,
      consumer: this.label,
    };
  }

  private retryDelay(attempt: number): number {
    const { type, delayMs, maxDelayMs } = this.queueOptions.backoff;
    return type === 'fixed' ? delayMs : Math.min(maxDelayMs, delayMs * 2 ** (attempt - 1));
  }
}
