import type { Logger } from '@nestjs/common';
import { describe, ShardedWorker, type Taken } from '../consumer/sharded-worker';
import type { RedisConnection } from '../redis/redis-connection';
import type { DelayContext } from '../interfaces';
import type { DelayQueue } from './delay-queue';
import type { ClaimedTask } from './delay-queue.store';

export type DelayHandler = (payload: unknown, ctx: DelayContext) => unknown;

/** Longest error text kept with a failed task. */
const MAX_ERROR_LENGTH = 2000;

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
    private readonly queue: DelayQueue<any>,
    private readonly handler: DelayHandler,
    concurrency: number,
    connection: RedisConnection,
    idlePollMs: number,
    logger: Logger,
    label: string,
  ) {
    super(queue.options.shards, queue.store.keys.wakeChannel, queue.clock, connection, idlePollMs, concurrency, logger, label);
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
      [...this.running.values()].map(({ shard, id, token }) => this.queue.store.release(shard, id, token).catch(() => false)),
    );
    const count = released.filter(Boolean).length;
    if (count > 0) this.logger.warn(`${this.label}: gave ${count} unfinished task(s) back to the queue for another worker`);
    return false;
  }

  private async handle(shard: number, task: ClaimedTask, firedAt: number): Promise<void> {
    const key = `${shard}:${task.id}:${task.token}`;
    const ctx: DelayContext = { queue: this.queue.name, id: task.id, attempt: task.attempt, runAt: task.runAt, firedAt };
    this.running.set(key, { shard, id: task.id, token: task.token });
    this.heartbeat ??= setInterval(() => this.beat(), Math.max(50, Math.floor(this.queue.options.visibilityTimeoutMs / 3)));
    let outcome: Promise<unknown>;
    try {
      await this.handler(JSON.parse(task.json), ctx);
      outcome = this.queue.acks.add(shard, { id: task.id, token: task.token });
    } catch (error) {
      outcome = this.fail(shard, task, error);
    } finally {
      this.running.delete(key);
      if (this.running.size === 0) this.stopHeartbeat();
    }
    // The slot is free once the handler is: recording the outcome overlaps with the next task.
    this.recording.add(outcome);
    outcome
      .catch((error) => {
        // The lease runs out and the task is delivered again: at-least-once holds without this write.
        this.logger.warn(`${this.label}: could not record the outcome of task "${task.id}": ${describe(error)}`);
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
            if (!held) this.logger.warn(`${this.label}: lost the lease of task "${deliveries[i].id}" (replaced, cancelled or expired)`);
          }),
        (error) => this.logger.warn(`${this.label}: could not extend leases: ${describe(error)}`),
      );
    }
  }

  private stopHeartbeat(): void {
    clearInterval(this.heartbeat);
    this.heartbeat = undefined;
  }

  private async fail(shard: number, task: ClaimedTask, error: unknown): Promise<void> {
    const text = (error instanceof Error ? error.stack ?? error.message : String(error)).slice(0, MAX_ERROR_LENGTH);
    const result = await this.queue.store.fail(shard, task.id, task.token, this.retryDelay(task.attempt), text);
    if (result?.outcome === 'dead') {
      this.logger.error(`${this.label}: task "${task.id}" failed attempt ${task.attempt} and is dead-lettered: ${describe(error)}`);
    } else if (result) {
      this.logger.warn(`${this.label}: task "${task.id}" failed attempt ${task.attempt}, retrying at ${new Date(result.at).toISOString()}: ${describe(error)}`);
    }
  }

  private retryDelay(attempt: number): number {
    const { type, delayMs, maxDelayMs } = this.queue.options.backoff;
    return type === 'fixed' ? delayMs : Math.min(maxDelayMs, delayMs * 2 ** (attempt - 1));
  }
}
