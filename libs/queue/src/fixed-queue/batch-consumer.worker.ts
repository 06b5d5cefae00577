import { setTimeout as delay } from 'node:timers/promises';
import { RunningDeliveries } from '../consumer/running-deliveries';
import { byShard } from '../utils/by-shard';
import { ShardedWorker, type Taken, type WorkerDependencies } from '../consumer/sharded-worker';
import { QueueConfigError } from '../errors';
import type { QueueEvents } from '../events/queue-events';
import type { BatchContext } from '../interfaces';
import type { ShardBatcher } from '../redis/shard-batcher';
import { describeError, failureText } from '../utils/errors';
import { logLine } from '../utils/log-line';
import type { BatchConsumerOptionsRules, FixedQueueOptionsRules } from '../validation/queue-options';
import type { ClaimedBatch, Delivery, FixedQueueStore } from './fixed-queue.store';

export type BatchHandler = (messages: unknown[], ctx: BatchContext) => unknown;
export type BatchFailureHandler = (error: unknown, messages: unknown[], ctx: BatchContext) => unknown;

/** What an acknowledgement of an ordered delivery tells its worker. */
export interface AckResult {
  serverNow: number;
  /** When the group is due again (-1: it holds nothing more), or null when the delivery was stale. */
  dueAt: number | null;
}

export interface BatchWorkerDependencies extends WorkerDependencies {
  store: FixedQueueStore;
  /** Acknowledgements of ordered deliveries, gathered per shard and tick. */
  acks: ShardBatcher<Delivery, AckResult>;
  delivery: Pick<FixedQueueOptionsRules, 'delivery' | 'leaseMs' | 'retryDelayMs' | 'deadLetter'>;
  handler: BatchHandler;
  onFailed: BatchFailureHandler | undefined;
  options: BatchConsumerOptionsRules;
}

/** Longest wait before a failed at-least-once batch is delivered again. */
const MAX_RETRY_DELAY_MS = 3_600_000;

interface Running {
  shard: number;
  /** Ordered queues: the delivery holding the group. */
  delivery?: Delivery;
  controller: AbortController;
}

/**
 * Runs one `@BatchConsumer` method: claims due batches (one group each) and hands them to the handler.
 * Continuous mode polls every shard; scheduled mode drains every due group when its schedule fires.
 * On ordered queues a batch holds its group until acknowledged; a heartbeat keeps the leases of running
 * batches, and on shutdown those whose handler does not finish in time are given back at once.
 */
export class BatchConsumerWorker extends ShardedWorker {
  private draining?: Promise<void>;
  /** Per shard, the groups the last call listed as due. */
  private readonly candidates: string[][];
  private readonly running: RunningDeliveries<Running>;
  /** Batches claimed so far: a scheduled drain of an ordered queue goes on while its rounds claim any. */
  private claimed = 0;
  private readonly name: string;
  private readonly store: FixedQueueStore;
  private readonly events: QueueEvents;
  private readonly acks: BatchWorkerDependencies['acks'];
  private readonly delivery: BatchWorkerDependencies['delivery'];
  private readonly handler: BatchHandler;
  private readonly onFailed: BatchFailureHandler | undefined;
  private readonly options: BatchConsumerOptionsRules;

  constructor(deps: BatchWorkerDependencies) {
    super(deps);
    if (deps.delivery.delivery === 'at-least-once' && deps.options.retries > 0) {
      throw new QueueConfigError(
        `@BatchConsumer on ${deps.label}: retries applies to at-most-once queues; "${deps.queue}" is at-least-once ` +
          'and retries through Redis (set maxAttempts and retryDelayMs on the queue instead)',
      );
    }
    this.name = deps.queue;
    this.store = deps.store;
    this.events = deps.events;
    this.acks = deps.acks;
    this.delivery = deps.delivery;
    this.handler = deps.handler;
    this.onFailed = deps.onFailed;
    this.options = deps.options;
    this.candidates = Array.from({ length: deps.shards }, () => []);
    this.running = new RunningDeliveries<Running>(
      deps.delivery.leaseMs,
      // Only ordered deliveries hold their group under a lease.
      deps.store.ordered
        ? (shard, running) =>
            this.store.extend(
              shard,
              running.map(({ delivery }) => delivery!),
            )
        : undefined,
      ({ delivery }) =>
        this.logger.warn(
          logLine(this.label, 'lost the lease of a running batch (its group may go to another consumer)', {
            group: delivery!.group,
          }),
        ),
      (error, count) => this.extendFailed(error, count),
    );
  }

  /** Scheduled mode: claims and handles every due batch of every shard, then resolves. Overlapping runs share one drain. */
  drain(): Promise<void> {
    if (this.stopped || this.isHeld) return Promise.resolve();
    this.draining ??= this.drainAll().finally(() => (this.draining = undefined));
    return this.draining;
  }

  override async stop(timeoutMs: number): Promise<boolean> {
    const finished = await super.stop(timeoutMs);
    await this.draining;
    if (!finished) await this.giveBack();
    await this.recorded();
    return finished;
  }

  protected async take(shard: number, limit: number): Promise<Taken> {
    const candidates = this.candidates[shard];
    // Ordered: a group claimed by one poll is held, so a second poll of the shard under way with the
    // same candidates would only read their heads for nothing; it lists instead. (Unordered, it takes
    // the groups' next batches.)
    if (this.store.ordered) this.candidates[shard] = [];
    const outcome = await this.store.take(shard, limit, candidates, this.options.raw);
    this.candidates[shard] = outcome.due;
    if (this.events.has('messages.expired')) {
      for (const { group, expired } of outcome.batches) {
        if (expired > 0) this.events.emit('messages.expired', { queue: this.name, group, count: expired });
      }
    }
    const jobs = outcome.batches
      .filter((batch) => batch.messages.length > 0)
      .map((batch) => () => this.handle(shard, batch, outcome.serverNow));
    this.claimed += jobs.length;
    return { outcome, jobs };
  }

  private async drainAll(): Promise<void> {
    for (;;) {
      const before = this.claimed;
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
      await this.recorded();
      // Ordered: a group's next batch became claimable only when its previous one was acknowledged.
      if (!this.store.ordered || this.claimed === before || this.stopped) return;
    }
  }

  private async handle(shard: number, batch: ClaimedBatch, claimedAt: number): Promise<void> {
    const running: Running = {
      shard,
      delivery: batch.token === undefined ? undefined : { group: batch.group, token: batch.token },
      controller: new AbortController(),
    };
    this.running.add(running);
    try {
      if (this.delivery.delivery === 'at-least-once') await this.deliverOnce(running, batch, claimedAt);
      else await this.deliverWithRetries(running, batch, claimedAt);
    } finally {
      this.running.delete(running);
    }
  }

  /** At-most-once: the messages left Redis with the claim; retries (if any) happen in this process. */
  private async deliverWithRetries(running: Running, batch: ClaimedBatch, claimedAt: number): Promise<void> {
    const attempts = this.options.retries + 1;
    const { events } = this;
    let durationMs = 0;
    for (let attempt = 1; ; attempt++) {
      const ctx = this.context(batch, claimedAt, attempt, running.controller.signal);
      const started = performance.now();
      try {
        await this.handler(batch.messages, ctx);
        durationMs += performance.now() - started;
        if (events.has('batch.completed'))
          events.emit('batch.completed', this.describeBatch(batch, claimedAt, attempt, durationMs));
        break;
      } catch (error) {
        durationMs += performance.now() - started;
        if (attempt < attempts && !running.controller.signal.aborted) {
          await delay(this.options.retryDelayMs * 2 ** (attempt - 1));
          continue;
        }
        this.logger.error(
          logLine(this.label, 'batch failed after its last attempt', {
            group: batch.group,
            size: batch.messages.length,
            attempts: attempt,
            error: describeError(error),
          }),
        );
        await this.failedForGood(batch, ctx, durationMs, error);
        break;
      }
    }
    if (running.delivery)
      this.record('ack', this.acknowledge(running.shard, running.delivery), 'batch', batchFields(batch));
  }

  /**
   * At-least-once: one delivery per claim. Resolving acknowledges (the messages leave Redis); throwing
   * schedules the next delivery of the same messages, or buries them after the last attempt.
   */
  private async deliverOnce(running: Running, batch: ClaimedBatch, claimedAt: number): Promise<void> {
    const delivery = running.delivery!;
    const ctx = this.context(batch, claimedAt, batch.attempt, running.controller.signal);
    const started = performance.now();
    const { events } = this;
    try {
      await this.handler(batch.messages, ctx);
    } catch (error) {
      const durationMs = performance.now() - started;
      if (running.controller.signal.aborted) return;
      const backoff = Math.min(MAX_RETRY_DELAY_MS, this.delivery.retryDelayMs * 2 ** Math.max(0, batch.attempt - 1));
      const failing = this.store
        .fail(running.shard, delivery, backoff, failureText(error, this.delivery.deadLetter.keepStack))
        .then(async ({ outcome, at }) => {
          if (outcome === 'retry') {
            this.dueAt(running.shard, at);
            this.logger.warn(
              logLine(this.label, 'batch failed, will be delivered again', {
                group: batch.group,
                size: batch.messages.length,
                attempt: batch.attempt,
                nextAttemptAt: new Date(at).toISOString(),
                error: describeError(error),
              }),
            );
          } else if (outcome === 'dead') {
            this.logger.error(
              logLine(this.label, 'batch failed its last attempt and is dead-lettered', {
                group: batch.group,
                size: batch.messages.length,
                attempts: batch.attempt,
                error: describeError(error),
              }),
            );
            this.dueAt(running.shard, at);
            await this.failedForGood(batch, ctx, durationMs, error);
          }
        });
      this.record('fail', failing, 'batch', batchFields(batch));
      return;
    }
    // Aborted: the lease was lost or the batch given back at shutdown; either way it is not ours to finish.
    if (running.controller.signal.aborted) return;
    const durationMs = performance.now() - started;
    const acked = this.acknowledge(running.shard, delivery).then((done) => {
      if (done && events.has('batch.completed'))
        events.emit('batch.completed', this.describeBatch(batch, claimedAt, batch.attempt, durationMs));
    });
    this.record('ack', acked, 'batch', batchFields(batch));
  }

  /**
   * Finishes an ordered delivery: the group is ready for its next batch. This worker, whose slot just
   * freed, is told (no hint is published: other processes find the group by their own polls).
   */
  private async acknowledge(shard: number, delivery: Delivery): Promise<boolean> {
    const { dueAt, serverNow } = await this.acks.add(shard, delivery);
    if (dueAt === null) return false;
    if (dueAt >= 0) {
      // Due now: the next poll claims it, rather than only listing it for the poll after.
      if (dueAt <= serverNow && !this.candidates[shard].includes(delivery.group))
        this.candidates[shard].push(delivery.group);
      this.dueAt(shard, dueAt);
    }
    return true;
  }

  private async failedForGood(batch: ClaimedBatch, ctx: BatchContext, durationMs: number, error: unknown) {
    const { events } = this;
    if (events.has('batch.failed'))
      events.emit('batch.failed', { ...this.describeBatch(batch, ctx.claimedAt, ctx.attempt, durationMs), error });
    if (!this.onFailed) return;
    try {
      await this.onFailed(error, batch.messages, ctx);
    } catch (hookError) {
      this.logger.error(
        logLine(this.label, 'onFailed hook threw', {
          group: batch.group,
          size: batch.messages.length,
          error: describeError(hookError),
        }),
      );
    }
  }

  /**
   * Shutdown ran out of time with handlers still running: their signals abort, and ordered deliveries
   * let go of their groups at once (at-least-once: due again, not counted as an attempt) instead of
   * holding them until their leases run out.
   */
  private async giveBack(): Promise<void> {
    this.running.stop();
    for (const { controller } of this.running) controller.abort(new Error('shutdown timeout ran out'));
    const atLeastOnce = this.delivery.delivery === 'at-least-once';
    const held = [...this.running].filter((running) => running.delivery);
    const given = await Promise.all(
      [...byShard(held)].map(([shard, running]) => {
        const deliveries = running.map(({ delivery }) => delivery!);
        return (
          atLeastOnce
            ? this.store.release(shard, deliveries)
            : this.store.ack(shard, deliveries).then(({ dueAt }) => dueAt.map((due) => due !== null))
        ).catch(() => [] as boolean[]);
      }),
    );
    const count = given.flat().filter(Boolean).length;
    if (count > 0)
      this.logger.warn(
        logLine(this.label, 'gave unfinished batches back to the queue for another consumer', { count }),
      );
  }

  private context(batch: ClaimedBatch, claimedAt: number, attempt: number, signal: AbortSignal): BatchContext {
    return { queue: this.name, group: batch.group, expired: batch.expired, claimedAt, attempt, signal };
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

/** What a log line says of a batch whose outcome could not be recorded. */
const batchFields = ({ group, attempt }: ClaimedBatch) => ({ group, attempt });
