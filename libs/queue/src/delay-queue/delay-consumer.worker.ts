import { RunningDeliveries, type RunningDelivery } from '../consumer/running-deliveries';
import { ShardedWorker, type Taken, type WorkerDependencies } from '../consumer/sharded-worker';
import { describeError, failureText } from '../utils/errors';
import { logLine } from '../utils/log-line';
import type { QueueEvents } from '../events/queue-events';
import type { ShardBatcher } from '../redis/shard-batcher';
import type { DelayQueueOptionsRules } from '../validation/queue-options';
import type { DelayContext, TaskFiredEvent } from '../interfaces';
import type { ClaimedTask, DelayQueueStore } from './delay-queue.store';

export type DelayHandler = (payload: unknown, ctx: DelayContext) => unknown;

export interface DelayWorkerDependencies extends WorkerDependencies {
  store: DelayQueueStore;
  /** The queue's acknowledgements, batched per shard with those of its other consumers in this process. */
  acks: ShardBatcher<{ id: string; token: string }, boolean>;
  handler: DelayHandler;
  /** The queue's lease and retry options. */
  options: Pick<DelayQueueOptionsRules, 'visibilityTimeoutMs' | 'backoff' | 'deadLetter'>;
}

/**
 * Runs one `@DelayConsumer` method: claims due tasks, extends their lease while the handler runs,
 * acknowledges on success and fails (retry or dead-letter) on a throw. On shutdown, tasks whose handler
 * does not finish in time are given back at once instead of waiting out their lease.
 */
/** A task being handled, and its delivery's fencing token. */
interface RunningTask extends RunningDelivery {
  id: string;
  token: string;
}

export class DelayConsumerWorker extends ShardedWorker {
  private readonly running: RunningDeliveries<RunningTask>;

  private readonly name: string;
  private readonly store: DelayQueueStore;
  private readonly acks: DelayWorkerDependencies['acks'];
  private readonly events: QueueEvents;
  private readonly handler: DelayHandler;
  private readonly options: DelayWorkerDependencies['options'];

  constructor(deps: DelayWorkerDependencies) {
    super(deps);
    this.name = deps.queue;
    this.store = deps.store;
    this.acks = deps.acks;
    this.events = deps.events;
    this.handler = deps.handler;
    this.options = deps.options;
    this.running = new RunningDeliveries<RunningTask>(
      deps.options.visibilityTimeoutMs,
      (shard, tasks) => this.store.extend(shard, tasks),
      ({ id }) =>
        this.logger.warn(
          logLine(this.label, 'lost the lease of a running task (replaced, cancelled or expired)', { id }),
        ),
      (error, count) => this.extendFailed(error, count),
    );
  }

  protected async take(shard: number, limit: number): Promise<Taken> {
    const outcome = await this.store.claim(shard, limit);
    return { outcome, jobs: outcome.tasks.map((task) => () => this.handle(shard, task, outcome.serverNow)) };
  }

  override async stop(timeoutMs: number): Promise<boolean> {
    const finished = await super.stop(timeoutMs);
    await this.recorded();
    if (finished) return true;
    this.running.stop();
    const released = await Promise.all(
      [...this.running].map(({ shard, id, token, controller }) => {
        controller.abort(new Error('shutdown timeout ran out'));
        return this.store.release(shard, id, token).catch(() => false);
      }),
    );
    const count = released.filter(Boolean).length;
    if (count > 0)
      this.logger.warn(logLine(this.label, 'gave unfinished tasks back to the queue for another worker', { count }));
    return false;
  }

  private async handle(shard: number, task: ClaimedTask, firedAt: number): Promise<void> {
    const controller = new AbortController();
    const ctx: DelayContext = {
      queue: this.name,
      id: task.id,
      attempt: task.attempt,
      runAt: task.runAt,
      firedAt,
      signal: controller.signal,
    };
    const running: RunningTask = { shard, id: task.id, token: task.token, controller };
    this.running.add(running);
    const { events } = this;
    if (events.has('task.fired')) events.emit('task.fired', this.describeTask(task, firedAt));
    let outcome: Promise<unknown>;
    let operation: 'ack' | 'fail' = 'ack';
    const started = performance.now();
    try {
      await this.handler(JSON.parse(task.json), ctx);
      const durationMs = performance.now() - started;
      outcome = this.acks.add(shard, { id: task.id, token: task.token });
      if (events.has('task.completed')) {
        outcome = outcome.then((completed) => {
          if (completed) events.emit('task.completed', { ...this.describeTask(task, firedAt), durationMs });
        });
      }
    } catch (error) {
      operation = 'fail';
      outcome = this.fail(shard, task, firedAt, performance.now() - started, error);
    } finally {
      this.running.delete(running);
    }
    this.record(operation, outcome, 'task', { id: task.id, attempt: task.attempt });
  }

  private async fail(
    shard: number,
    task: ClaimedTask,
    firedAt: number,
    durationMs: number,
    error: unknown,
  ): Promise<void> {
    const text = failureText(error, this.options.deadLetter.keepStack);
    const result = await this.store.fail(shard, task.id, task.token, this.retryDelay(task.attempt), text);
    // Null: the lease was lost meanwhile (the task was replaced, cancelled, or went to another worker).
    if (!result) return;
    const { events } = this;
    if (result.outcome === 'dead') {
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

  private describeTask(task: ClaimedTask, firedAt: number): TaskFiredEvent {
    return {
      queue: this.name,
      id: task.id,
      attempt: task.attempt,
      runAt: task.runAt,
      firedAt,
      consumer: this.label,
    };
  }

  private retryDelay(attempt: number): number {
    const { type, delayMs, maxDelayMs } = this.options.backoff;
    return type === 'fixed' ? delayMs : Math.min(maxDelayMs, delayMs * 2 ** (attempt - 1));
  }
}
