import { setTimeout as delay } from 'node:timers/promises';
import { ABANDONED, LazyAbort, timedOut, type RunningDelivery } from '../consumer/deliveries';
import { QueueConsumer, type ConsumerDependencies } from '../consumer/queue-consumer';
import type { Claimed } from '../consumer/shard-poller';
import { QueueConfigError } from '../errors';
import type { BatchContext } from '../interfaces';
import { QueueKeys } from '../redis/keys';
import { ShardBatcher } from '../redis/shard-batcher';
import { byShard } from '../utils/by-shard';
import { describeError, failureText } from '../utils/errors';
import { logLine } from '../utils/log-line';
import type { BatchConsumerOptionsRules, FixedQueueOptionsRules } from '../validation/queue-options';
import { FixedQueueStore, type ClaimedBatch, type Delivery } from './fixed-queue.store';

export type BatchHandler = (messages: unknown[], ctx: BatchContext) => unknown;
export type BatchFailureHandler = (error: unknown, messages: unknown[], ctx: BatchContext) => unknown;

export interface BatchConsumerDependencies extends Omit<ConsumerDependencies, 'concurrency' | 'handlerTimeoutMs'> {
  prefix: string;
  /** The queue's options: its layout, delivery mode, leases and retries. */
  queueOptions: FixedQueueOptionsRules;
  options: BatchConsumerOptionsRules;
  handler: BatchHandler;
  onFailed: BatchFailureHandler | undefined;
}

/** What an acknowledgement of an ordered delivery tells its consumer. */
interface AckResult {
  serverNow: number;
  /** When the group is due again (-1: it holds nothing more), or null when the delivery was stale. */
  dueAt: number | null;
}

/** Longest wait before a failed at-least-once batch is delivered again. */
const MAX_RETRY_DELAY_MS = 3_600_000;

class RunningBatch implements RunningDelivery {
  readonly aborter = new LazyAbort();

  constructor(
    readonly shard: number,
    readonly group: string,
    /** Ordered queues: the delivery holding the group. */
    readonly delivery: Delivery | undefined,
  ) {}

  get what(): string {
    return `batch of group "${this.group}"`;
  }
}

/** A handler's context; its signal is made when first asked for. */
class Context implements BatchContext {
  constructor(
    readonly queue: string,
    readonly group: string,
    readonly expired: number,
    readonly claimedAt: number,
    readonly attempt: number,
    private readonly aborter: LazyAbort,
  ) {}

  get signal(): AbortSignal {
    return this.aborter.signal;
  }
}

/**
 * Runs one `@BatchConsumer` method: claims due batches (one group each) and hands them to the handler.
 * On ordered queues a batch holds its group until acknowledged, under a lease its heartbeat keeps.
 * At-least-once: resolving acknowledges, throwing (or running past `handlerTimeoutMs`) schedules the
 * next delivery of the same messages or buries them; at-most-once: the messages left Redis with the
 * claim, and retries (`retries`) happen in this process.
 */
export class BatchConsumerWorker extends QueueConsumer<ClaimedBatch, RunningBatch> {
  readonly kind = 'fixed';
  private readonly store: FixedQueueStore;
  /** Acknowledgements of ordered deliveries, one script call per shard and tick. */
  private readonly acks: ShardBatcher<Delivery, AckResult>;
  /** Per shard, the groups the last call listed as due. */
  private readonly candidates: string[][];
  private readonly queueOptions: FixedQueueOptionsRules;
  private readonly options: BatchConsumerOptionsRules;
  private readonly handler: BatchHandler;
  private readonly onFailed: BatchFailureHandler | undefined;

  constructor(deps: BatchConsumerDependencies) {
    const { queueOptions, options } = deps;
    if (queueOptions.delivery === 'at-least-once' && options.retries > 0) {
      throw new QueueConfigError(
        `@BatchConsumer on ${deps.label}: retries applies to at-most-once queues; "${deps.queue}" is at-least-once ` +
          'and retries through Redis (set maxAttempts and retryDelayMs on the queue instead)',
      );
    }
    const store = new FixedQueueStore(
      deps.connection.scripts,
      new QueueKeys(deps.prefix, deps.queue, queueOptions.shards),
      queueOptions,
    );
    super(
      { ...deps, concurrency: options.concurrency, handlerTimeoutMs: options.handlerTimeoutMs },
      {
        leaseMs: queueOptions.leaseMs,
        // Only ordered deliveries hold their group under a lease.
        extend: store.ordered
          ? (shard, running) =>
              store.extend(
                shard,
                running.map(({ delivery }) => delivery!),
              )
          : undefined,
      },
    );
    this.store = store;
    this.queueOptions = queueOptions;
    this.options = options;
    this.handler = deps.handler;
    this.onFailed = deps.onFailed;
    this.candidates = Array.from({ length: queueOptions.shards }, () => []);
    this.acks = new ShardBatcher(async (shard, deliveries) => {
      const { dueAt, serverNow } = await this.store.ack(shard, deliveries);
      return dueAt.map((due) => ({ dueAt: due, serverNow }));
    });
  }

  protected async claim(shard: number, limit: number): Promise<Claimed<ClaimedBatch>> {
    const candidates = this.candidates[shard];
    // Ordered: a group claimed by one poll is held, so a second poll of the shard under way with the
    // same candidates would only read their heads for nothing; it lists instead. (Unordered, it takes
    // the groups' next batches.)
    if (this.store.ordered) this.candidates[shard] = [];
    const outcome = await this.store.take(shard, limit, candidates, this.options.raw);
    this.candidates[shard] = outcome.due;
    if (this.events.has('messages.expired')) {
      for (const { group, expired } of outcome.batches) {
        if (expired > 0) this.events.emit('messages.expired', { queue: this.queue, group, count: expired });
      }
    }
    return { outcome, items: outcome.batches.filter((batch) => batch.messages.length > 0) };
  }

  protected handle(shard: number, batch: ClaimedBatch, claimedAt: number): Promise<void> {
    const running = new RunningBatch(
      shard,
      batch.group,
      batch.token === undefined ? undefined : { group: batch.group, token: batch.token },
    );
    return this.queueOptions.delivery === 'at-least-once'
      ? this.deliverOnce(running, batch, claimedAt)
      : this.deliverWithRetries(running, batch, claimedAt);
  }

  /** At-most-once: the messages left Redis with the claim; retries (if any) happen in this process. */
  private async deliverWithRetries(running: RunningBatch, batch: ClaimedBatch, claimedAt: number): Promise<void> {
    const attempts = this.options.retries + 1;
    const { aborter } = running;
    let ctx = this.context(batch, claimedAt, 1, aborter);
    let durationMs = 0;
    /** When the attempt under way started (0 between attempts). */
    let started = 0;
    try {
      // One deadline for every attempt: the slot is the batch's until the last one ends.
      await this.deliveries.run(running, async () => {
        for (let attempt = 1; ; attempt++) {
          ctx = this.context(batch, claimedAt, attempt, aborter);
          started = performance.now();
          try {
            await this.handler(batch.messages, ctx);
          } catch (error) {
            durationMs += performance.now() - started;
            started = 0;
            if (attempt >= attempts || aborter.aborted) throw error;
            // Aborted meanwhile (lease lost, timed out): the handler's error stands.
            await delay(this.options.retryDelayMs * 2 ** (attempt - 1), undefined, { signal: aborter.signal }).catch(
              () => Promise.reject(error),
            );
            continue;
          }
          durationMs += performance.now() - started;
          started = 0;
          return;
        }
      });
      if (this.events.has('batch.completed'))
        this.events.emit('batch.completed', this.describeBatch(batch, claimedAt, ctx.attempt, durationMs));
    } catch (error) {
      // Shutdown gave the group back already.
      if (error === ABANDONED) return;
      if (started) durationMs += performance.now() - started;
      if (timedOut(error, running)) this.timedOut({ group: batch.group });
      else
        this.logger.error(
          logLine(this.label, 'batch failed after its last attempt', {
            group: batch.group,
            size: batch.messages.length,
            attempts: ctx.attempt,
            error: describeError(error),
          }),
        );
      await this.failedForGood(batch, ctx, durationMs, error);
    }
    if (running.delivery) this.record('ack', this.acknowledge(running.shard, running.delivery), running);
  }

  /**
   * At-least-once: one delivery per claim. Resolving acknowledges (the messages leave Redis); throwing
   * or timing out schedules the next delivery of the same messages, or buries them after the last attempt.
   */
  private async deliverOnce(running: RunningBatch, batch: ClaimedBatch, claimedAt: number): Promise<void> {
    const delivery = running.delivery!;
    const ctx = this.context(batch, claimedAt, batch.attempt, running.aborter);
    const started = performance.now();
    try {
      await this.deliveries.run(running, () => this.handler(batch.messages, ctx));
    } catch (error) {
      if (error === ABANDONED) return;
      const durationMs = performance.now() - started;
      if (timedOut(error, running)) this.timedOut({ group: batch.group });
      // The lease was lost: the batch is another consumer's to finish.
      else if (running.aborter.aborted) return;
      this.record('fail', this.fail(running, batch, ctx, durationMs, error), running);
      return;
    }
    // Aborted: the lease was lost; the batch is not ours to finish.
    if (running.aborter.aborted) return;
    const durationMs = performance.now() - started;
    const acked = this.acknowledge(running.shard, delivery).then((done) => {
      if (done && this.events.has('batch.completed'))
        this.events.emit('batch.completed', this.describeBatch(batch, claimedAt, batch.attempt, durationMs));
    });
    this.record('ack', acked, running);
  }

  private async fail(
    running: RunningBatch,
    batch: ClaimedBatch,
    ctx: BatchContext,
    durationMs: number,
    error: unknown,
  ): Promise<void> {
    const { retryDelayMs, deadLetter } = this.queueOptions;
    const backoff = Math.min(MAX_RETRY_DELAY_MS, retryDelayMs * 2 ** Math.max(0, batch.attempt - 1));
    const { shard } = running;
    const { outcome, at } = await this.store.fail(
      shard,
      running.delivery!,
      backoff,
      failureText(error, deadLetter.keepStack),
    );
    const fields = { group: batch.group, size: batch.messages.length, error: describeError(error) };
    if (outcome === 'retry') {
      this.dueAt(shard, at);
      this.logger.warn(
        logLine(this.label, 'batch failed, will be delivered again', {
          ...fields,
          attempt: batch.attempt,
          nextAttemptAt: new Date(at).toISOString(),
        }),
      );
    } else if (outcome === 'dead') {
      this.logger.error(
        logLine(this.label, 'batch failed its last attempt and is dead-lettered', {
          ...fields,
          attempts: batch.attempt,
        }),
      );
      this.dueAt(shard, at);
      await this.failedForGood(batch, ctx, durationMs, error);
    }
  }

  /**
   * Finishes an ordered delivery: the group is ready for its next batch. This consumer, whose slot just
   * freed, is told (no hint is published: other processes find the group by their own polls).
   */
  private async acknowledge(shard: number, delivery: Delivery): Promise<boolean> {
    const { dueAt, serverNow } = await this.acks.add(shard, delivery);
    if (dueAt === null) return false;
    if (dueAt >= 0) {
      // Due now: the next poll claims it, rather than only listing it for the poll after.
      if (dueAt <= serverNow && !this.candidates[shard].includes(delivery.group))
        this.candidates[shard].push(delivery.group);
      this.dueAt(shard, dueAt, serverNow);
    }
    return true;
  }

  private async failedForGood(batch: ClaimedBatch, ctx: BatchContext, durationMs: number, error: unknown) {
    if (this.events.has('batch.failed'))
      this.events.emit('batch.failed', { ...this.describeBatch(batch, ctx.claimedAt, ctx.attempt, durationMs), error });
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
   * Ordered deliveries that shutdown abandoned let go of their groups at once (at-least-once: due
   * again, not counted as an attempt) instead of holding them until their leases run out.
   */
  protected async giveBack(abandoned: RunningBatch[]): Promise<number> {
    const atLeastOnce = this.queueOptions.delivery === 'at-least-once';
    const held = abandoned.filter((running) => running.delivery);
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
    return given.flat().filter(Boolean).length;
  }

  private context(batch: ClaimedBatch, claimedAt: number, attempt: number, aborter: LazyAbort): BatchContext {
    return new Context(this.queue, batch.group, batch.expired, claimedAt, attempt, aborter);
  }

  private describeBatch(batch: ClaimedBatch, claimedAt: number, attempts: number, durationMs: number) {
    return {
      queue: this.queue,
      group: batch.group,
      size: batch.messages.length,
      attempts,
      claimedAt,
      durationMs,
      consumer: this.label,
    };
  }
}
