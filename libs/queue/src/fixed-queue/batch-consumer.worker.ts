import { setTimeout as delay } from 'node:timers/promises';
import { ShardedWorker, type Taken, type WorkerDependencies } from '../consumer/sharded-worker';
import { describeError } from '../utils/errors';
import { logLine } from '../utils/log-line';
import type { BatchConsumerOptionsRules } from '../validation/queue-options';
import type { BatchContext } from '../interfaces';
import type { QueueEvents } from '../events/queue-events';
import type { ClaimedBatch, FixedQueueStore } from './fixed-queue.store';

export type BatchHandler = (messages: unknown[], ctx: BatchContext) => unknown;
export type BatchFailureHandler = (error: unknown, messages: unknown[], ctx: BatchContext) => unknown;

export interface BatchWorkerDependencies extends WorkerDependencies {
  store: FixedQueueStore;
  handler: BatchHandler;
  onFailed: BatchFailureHandler | undefined;
  options: BatchConsumerOptionsRules;
}

/**
 * Runs one `@BatchConsumer` method: claims due batches (one group each) and hands them to the handler.
 * Continuous mode polls every shard; scheduled mode drains every due group when its schedule fires.
 */
export class BatchConsumerWorker extends ShardedWorker {
  private draining?: Promise<void>;
  /** Per shard, the groups the last call listed as due. */
  private readonly candidates: string[][];
  private readonly name: string;
  private readonly store: FixedQueueStore;
  private readonly events: QueueEvents;
  private readonly handler: BatchHandler;
  private readonly onFailed: BatchFailureHandler | undefined;
  private readonly options: BatchConsumerOptionsRules;

  constructor(deps: BatchWorkerDependencies) {
    super(deps);
    this.name = deps.queue;
    this.store = deps.store;
    this.events = deps.events;
    this.handler = deps.handler;
    this.onFailed = deps.onFailed;
    this.options = deps.options;
    this.candidates = Array.from({ length: deps.shards }, () => []);
  }

  /** Scheduled mode: claims and handles every due batch of every shard, then resolves. Overlapping runs share one drain. */
  drain(): Promise<void> {
    if (this.stopped) return Promise.resolve();
    this.draining ??= this.drainAll().finally(() => (this.draining = undefined));
    return this.draining;
  }

  override async stop(timeoutMs: number): Promise<boolean> {
    const stopping = super.stop(timeoutMs);
    await this.draining;
    return stopping;
  }

  protected async take(shard: number, limit: number): Promise<Taken> {
    const outcome = await this.store.take(shard, limit, this.candidates[shard], this.options.raw);
    this.candidates[shard] = outcome.due;
    if (this.events.has('messages.expired')) {
      for (const { group, expired } of outcome.batches) {
        if (expired > 0) this.events.emit('messages.expired', { queue: this.name, group, count: expired });
      }
    }
    const jobs = outcome.batches
      .filter((batch) => batch.messages.length > 0)
      .map((batch) => () => this.handle(batch, outcome.serverNow));
    return { outcome, jobs };
  }

  private async drainAll(): Promise<void> {
    await Promise.all(
      Array.from({ length: this.shards }, async (_, shard) => {
        while (!this.stopped) {
          const outcome = await this.pollShard(shard).catch((error) => {
            this.pollFailed(error);
            return undefined;
          });
          if (!outcome || outcome.nextDueAt > outcome.serverNow) break;
        }
      }),
    );
    await this.slots.whenIdle();
  }

  private async handle(batch: ClaimedBatch, claimedAt: number): Promise<void> {
    const attempts = this.options.retries + 1;
    const { events } = this;
    let durationMs = 0;
    for (let attempt = 1; ; attempt++) {
      const ctx: BatchContext = {
        queue: this.name,
        group: batch.group,
        expired: batch.expired,
        claimedAt,
        attempt,
      };
      const started = performance.now();
      try {
        await this.handler(batch.messages, ctx);
        durationMs += performance.now() - started;
        if (events.has('batch.completed'))
          events.emit('batch.completed', this.describeBatch(batch, claimedAt, attempt, durationMs));
        return;
      } catch (error) {
        durationMs += performance.now() - started;
        if (attempt < attempts) {
          await delay(this.options.retryDelayMs * 2 ** (attempt - 1));
          continue;
        }
        const size = batch.messages.length;
        this.logger.error(
          logLine(this.label, 'batch failed after its last attempt', {
            group: batch.group,
            size,
            attempts: attempt,
            error: describeError(error),
          }),
        );
        if (events.has('batch.failed'))
          events.emit('batch.failed', { ...this.describeBatch(batch, claimedAt, attempt, durationMs), error });
        if (this.onFailed) {
          try {
            await this.onFailed(error, batch.messages, ctx);
          } catch (hookError) {
            this.logger.error(
              logLine(this.label, 'onFailed hook threw', { group: batch.group, size, error: describeError(hookError) }),
            );
          }
        }
        return;
      }
    }
  }

  private describeBatch(batch: ClaimedBatch, claimedAt: number, attempts: number, durationMs: number) {
    return {
      queue: this.name,
      group: batch.group,
      size: batch.messages.length,
      attempts,
      claimedAt,
      durationMs,
      consumer: this.label,
    };
  }
}
