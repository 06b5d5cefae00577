import type { Logger } from '@nestjs/common';
import { ShardedWorker, type Taken } from '../consumer/sharded-worker';
import { describeError, errorDetail } from '../utils/errors';
import { logLine } from '../utils/log-line';
import type { RedisConnection } from '../redis/redis-connection';
import type { DelayContext, TaskFiredEvent } from '../interfaces';
import type { DelayQueue } from './delay-queue';
import type { ClaimedTask } from './delay-queue.store';

export type DelayHandler = (payload: unknown, ctx: DelayContext) => unknown;

/**
 * Runs one `@DelayConsumer` method: claims due tasks, extends their lease while the handler runs,
 * acknowledges on success and fails (retry or dead-letter) on a throw. On shutdown, tasks whose handler
 * does not finish in time are given back at once instead of waiting out their lease.
 */
export class DelayConsumerWorker extends ShardedWorker {
  /** Acks and fails on their way to Redis; shutdown waits for them before the connection closes. */
  private readonly recording = new Set<Promise<unknown>>();
  private readonly running = new Map<string, { shard: number; id: string; token: string }>();
  private heartbeat?: NodeJS.Timeout;

  constructor(
    private readonly queue: DelayQueue<unknown>,
    private readonly handler: DelayHandler,
    concurrency: number,
    connection: RedisConnection,
    idlePollMs: number,
    logger: Logger,
    label: string,
  ) {
    super(
      queue.options.shards,
      queue.store.keys.wakeChannel,
      queue.clock,
      connection,
      idlePollMs,
      concurrency,
      logger,
      label,
      queue,
    );
  }

  protected async take(shard: number, limit: number): Promise<Taken> {
    const outcome = await this.queue.store.claim(shard, limit);
    return { outcome, jobs: outcome.tasks.map((task) => () => this.handle(shard, task, outcome.serverNow)) };
  }

  override async stop(timeoutMs: number): Promise<boolean> {
    const finished = await super.stop(timeoutMs);
    await Promise.allSettled(this.recording);
    if (finished) return true;
    this.stopHeartbeat();
    const released = await Promise.all(
      [...this.running.values()].map(({ shard, id, token }) =>
        this.queue.store.release(shard, id, token).catch(() => false),
      ),
    );
    const count = released.filter(Boolean).length;
    if (count > 0)
      this.logger.warn(logLine(this.label, 'gave unfinished tasks back to the queue for another worker', { count }));
    return false;
  }

  private async handle(shard: number, task: ClaimedTask, firedAt: number): Promise<void> {
    const key = `${shard}:${task.id}:${task.token}`;
    const ctx: DelayContext = {
      queue: this.queue.name,
      id: task.id,
      attempt: task.attempt,
      runAt: task.runAt,
      firedAt,
    };
    this.running.set(key, { shard, id: task.id, token: task.token });
    this.heartbeat ??= setInterval(
      () => this.beat(),
      Math.max(50, Math.floor(this.queue.options.visibilityTimeoutMs / 3)),
    );
    const { events } = this.queue;
    if (events.has('task.fired')) events.emit('task.fired', this.describeTask(task, firedAt));
    let outcome: Promise<unknown>;
    let operation: 'ack' | 'fail' = 'ack';
    const started = performance.now();
    try {
      await this.handler(JSON.parse(task.json), ctx);
      const durationMs = performance.now() - started;
      outcome = this.queue.acks.add(shard, { id: task.id, token: task.token });
      if (events.has('task.completed')) {
        outcome = outcome.then((completed) => {
          if (completed) events.emit('task.completed', { ...this.describeTask(task, firedAt), durationMs });
        });
      }
    } catch (error) {
      operation = 'fail';
      outcome = this.fail(shard, task, firedAt, performance.now() - started, error);
    } finally {
      this.running.delete(key);
      if (this.running.size === 0) this.stopHeartbeat();
    }
    // The slot is free once the handler is: recording the outcome overlaps with the next task.
    this.recording.add(outcome);
    outcome
      .catch((error) => {
        // The lease runs out and the task is delivered again: at-least-once holds without this write.
        this.logger.warn(
          logLine(this.label, `could not record the task's ${operation}`, {
            id: task.id,
            attempt: task.attempt,
            error: describeError(error),
          }),
        );
        this.reportError(operation, error);
      })
      .finally(() => this.recording.delete(outcome));
  }

  /**
   * Extends the lease of every running task, one call per shard, at a third of the lease: two missed
   * beats still leave it alive. One timer for the worker, not one per task.
   */
  private beat(): void {
    const byShard = new Map<number, { id: string; token: string }[]>();
    for (const { shard, id, token } of this.running.values()) {
      const list = byShard.get(shard);
      if (list) list.push({ id, token });
      else byShard.set(shard, [{ id, token }]);
    }
    for (const [shard, deliveries] of byShard) {
      this.queue.store.extend(shard, deliveries).then(
        (kept) =>
          kept.forEach((held, i) => {
            if (!held)
              this.logger.warn(
                logLine(this.label, 'lost the lease of a running task (replaced, cancelled or expired)', {
                  id: deliveries[i].id,
                }),
              );
          }),
        (error) => {
          this.logger.warn(
            logLine(this.label, 'could not extend leases', { count: deliveries.length, error: describeError(error) }),
          );
          this.reportError('extend', error);
        },
      );
    }
  }

  private stopHeartbeat(): void {
    clearInterval(this.heartbeat);
    this.heartbeat = undefined;
  }

  private async fail(
    shard: number,
    task: ClaimedTask,
    firedAt: number,
    durationMs: number,
    error: unknown,
  ): Promise<void> {
    const text = errorDetail(error);
    const result = await this.queue.store.fail(shard, task.id, task.token, this.retryDelay(task.attempt), text);
    // Null: the lease was lost meanwhile (the task was replaced, cancelled, or went to another worker).
    if (!result) return;
    const { events } = this.queue;
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
      queue: this.queue.name,
      id: task.id,
      attempt: task.attempt,
      runAt: task.runAt,
      firedAt,
      consumer: this.label,
    };
  }

  private retryDelay(attempt: number): number {
    const { type, delayMs, maxDelayMs } = this.queue.options.backoff;
    return type === 'fixed' ? delayMs : Math.min(maxDelayMs, delayMs * 2 ** (attempt - 1));
  }
}
