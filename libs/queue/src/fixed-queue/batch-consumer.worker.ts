import { setTimeout as delay } from 'node:timers/promises';
import { ABANDONED, LazyAbort, leaseLost, overdue, type RunningDelivery } from '../consumer/deliveries';
import { QueueConsumer, type ConsumerDependencies } from '../consumer/queue-consumer';
import type { Claimed } from '../consumer/shard-poller';
import { QueueConfigError } from '../errors';
import type { BatchContext } from '../interfaces';
import { ShardBatcher } from '../redis/shard-batcher';
import { byShard } from '../utils/by-shard';
import { describeError, failureText } from '../utils/errors';
import { logLine } from '../utils/log-line';
import type { BatchConsumerOptionsRules, FixedQueueOptionsRules } from '../validation/queue-options';
import { ATTRIBUTES, overdueHook, type ProcessSpan, type QueueTracer } from '../tracing/queue-tracer';
import { FixedQueueStore, type Acknowledged, type ClaimedBatch, type Delivery } from './fixed-queue.store';

export type BatchHandler = (messages: unknown[], ctx: BatchContext) => unknown;
export type BatchFailureHandler = (error: unknown, messages: unknown[], ctx: BatchContext) => unknown;

export interface BatchConsumerDependencies extends ConsumerDependencies {
  /** The queue's options: its layout, delivery mode, leases and retries. */
  queueOptions: FixedQueueOptionsRules;
  options: BatchConsumerOptionsRules;
  handler: BatchHandler;
  onFailed: BatchFailureHandler | undefined;
  /** The queue is traced: a process span per batch. */
  tracer?: QueueTracer;
}

/** What an acknowledgement of an ordered delivery tells its consumer. */
interface AckResult {
  serverNow: number;
  /** When the group is due again (-1: it holds nothing more), or null when the delivery was stale. */
  dueAt: number | null;
  /** The group's next batch, claimed for the slot that asked for it. */
  next?: ClaimedBatch;
  /** The group's messages discarded for age on the way. */
  expired: number;
}

/** A batch for a slot, and when it was claimed (server ms). */
interface Handover {
  batch: ClaimedBatch;
  claimedAt: number;
}

/**
 * Batches of one group a slot handles in a row, each handed over by the acknowledgement of the one
 * before (see `handle`); then the group goes back to the ready index, so that a group that never
 * empties does not keep a slot from the others.
 */
const MAX_HANDOVERS = 16;

/**
 * Largest batches handed over by acknowledgements. The script returns the entries itself, which costs
 * Redis about twice what an LRANGE does: worth it while a claim call weighs more than the entries it
 * carries, not for batches of a hundred (BENCHMARKS.md, per-group FIFO and consume).
 */
const HANDOVER_MAX_BATCH = 16;

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

  get subject(): { group: string } {
    return { group: this.group };
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
 * On ordered queues a batch holds its group until acknowledged, under a lease its heartbeat keeps, also
 * past `handlerTimeoutMs` (the slot is freed then, the group is not). At-least-once: resolving
 * acknowledges, throwing schedules the next delivery of the same messages or buries them; at-most-once:
 * the messages left Redis with the claim, and retries (`retries`) happen in this process.
 */
export class BatchConsumerWorker extends QueueConsumer<ClaimedBatch, RunningBatch> {
  readonly kind = 'fixed';
  private readonly store: FixedQueueStore;
  /** Acknowledgements of ordered deliveries, one script call per shard and tick. */
  private readonly acks: ShardBatcher<Acknowledged, AckResult>;
  /** Per shard, the groups the last call listed as due. */
  private readonly candidates: string[][];
  private readonly queueOptions: FixedQueueOptionsRules;
  private readonly options: BatchConsumerOptionsRules;
  private readonly handler: BatchHandler;
  private readonly onFailed: BatchFailureHandler | undefined;
  private readonly tracer: QueueTracer | undefined;

  constructor(deps: BatchConsumerDependencies) {
    const { queueOptions, options } = deps;
    if (queueOptions.delivery === 'at-least-once' && options.retries > 0) {
      throw new QueueConfigError(
        `@BatchConsumer on ${deps.label}: retries applies to at-most-once queues; "${deps.queue}" is at-least-once ` +
          'and retries through Redis (set maxAttempts and retryDelayMs on the queue instead)',
      );
    }
    const store = new FixedQueueStore(deps.connection.scripts, deps.keys, queueOptions);
    super(deps, {
      leaseMs: queueOptions.leaseMs,
      // Only ordered deliveries hold their group under a lease.
      extend: store.ordered
        ? (shard, running) =>
            store.extend(
              shard,
              running.map(({ delivery }) => delivery!),
            )
        : undefined,
    });
    this.store = store;
    this.queueOptions = queueOptions;
    this.options = options;
    this.handler = deps.handler;
    this.onFailed = deps.onFailed;
    this.tracer = deps.tracer;
    this.candidates = Array.from({ length: queueOptions.shards }, () => []);
    this.acks = new ShardBatcher<Acknowledged, AckResult>(async (shard, deliveries) => {
      const traced = this.tracer !== undefined;
      const { dueAt, serverNow, next, expired } = await this.store.ack(shard, deliveries, this.options.raw, traced);
      return dueAt.map((due, i) => ({ dueAt: due, serverNow, next: next[i], expired: expired[i] }));
    });
  }

  protected async claim(shard: number, limit: number): Promise<Claimed<ClaimedBatch>> {
    const candidates = this.candidates[shard];
    // Ordered: a group claimed by one poll is held, so a second poll of the shard under way with the
    // same candidates would only read their heads for nothing; it lists instead. (Unordered, it takes
    // the groups' next batches.)
    if (this.store.ordered) this.candidates[shard] = [];
    const outcome = await this.store.take(shard, limit, candidates, this.options.raw, this.tracer !== undefined);
    this.candidates[shard] = outcome.due;
    if (this.events.has('messages.expired')) {
      for (const { group, expired } of outcome.batches) {
        if (expired > 0) this.events.emit('messages.expired', { queue: this.queue, group, count: expired });
      }
    }
    return { outcome, items: outcome.batches.filter((batch) => batch.messages.length > 0) };
  }

  /**
   * Handles a claimed batch, then, on ordered queues, the group's next ones for as long as its
   * acknowledgement hands one over (due now, `MAX_HANDOVERS` in a row at most): one script call per
   * batch instead of an acknowledgement and a claim.
   */
  protected async handle(shard: number, batch: ClaimedBatch, claimedAt: number, free: () => void): Promise<void> {
    let next: Handover | undefined = { batch, claimedAt };
    for (let handovers = 1; next; handovers++) {
      const current: ClaimedBatch = next.batch;
      const running: RunningBatch = new RunningBatch(
        shard,
        current.group,
        current.token === undefined ? undefined : { group: current.group, token: current.token },
      );
      const span = this.tracer?.process(
        {
          [ATTRIBUTES.group]: current.group,
          [ATTRIBUTES.attempt]: current.attempt,
          [ATTRIBUTES.expired]: current.expired,
          'messaging.batch.message_count': current.messages.length,
        },
        current.carriers,
      );
      const more = handovers < MAX_HANDOVERS && this.queueOptions.batchSize <= HANDOVER_MAX_BATCH;
      next =
        this.queueOptions.delivery === 'at-least-once'
          ? await this.deliverOnce(running, current, next.claimedAt, more, span, free)
          : await this.deliverWithRetries(running, current, next.claimedAt, more, span, free);
    }
  }

  /** Calls the handler, in its process span's context when traced. */
  private invoke(span: ProcessSpan | undefined, messages: unknown[], ctx: BatchContext): unknown {
    return span ? span.run(() => this.handler(messages, ctx)) : this.handler(messages, ctx);
  }

  /**
   * At-most-once: the messages left Redis with the claim; retries (if any) happen in this process, none
   * begins past `handlerTimeoutMs`.
   */
  private async deliverWithRetries(
    running: RunningBatch,
    batch: ClaimedBatch,
    claimedAt: number,
    more: boolean,
    span: ProcessSpan | undefined,
    free: () => void,
  ): Promise<Handover | undefined> {
    const attempts = this.options.retries + 1;
    const { aborter } = running;
    let ctx = this.context(batch, claimedAt, 1, aborter);
    let durationMs = 0;
    /** When the attempt under way started (0 between attempts). */
    let started = 0;
    try {
      // One deadline for every attempt: the slot is the batch's until the last one ends.
      await this.deliveries.run(
        running,
        async () => {
          for (let attempt = 1; ; attempt++) {
            ctx = this.context(batch, claimedAt, attempt, aborter);
            started = performance.now();
            try {
              await this.invoke(span, batch.messages, ctx);
            } catch (error) {
              durationMs += performance.now() - started;
              started = 0;
              if (attempt >= attempts || aborter.aborted) throw error;
              span?.retrying(error, { [ATTRIBUTES.attempt]: attempt });
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
        },
        overdueHook(span, free),
      );
      span?.end('ack', { [ATTRIBUTES.attempt]: ctx.attempt });
      if (this.events.has('batch.completed'))
        this.events.emit('batch.completed', this.describeBatch(batch, claimedAt, ctx.attempt, durationMs));
    } catch (error) {
      // Shutdown gave the group back already.
      if (error === ABANDONED) {
        span?.end('abandoned');
        return undefined;
      }
      if (started) durationMs += performance.now() - started;
      span?.failed(error);
      span?.end('failed', { [ATTRIBUTES.attempt]: ctx.attempt });
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
    return running.delivery ? this.finish(running, more && !overdue(running)) : undefined;
  }

  /**
   * At-least-once: one delivery per claim. Resolving acknowledges (the messages leave Redis); throwing
   * schedules the next delivery of the same messages, or buries them after the last attempt. A handler
   * past `handlerTimeoutMs` keeps its batch until it settles; then its outcome counts the same way.
   */
  private async deliverOnce(
    running: RunningBatch,
    batch: ClaimedBatch,
    claimedAt: number,
    more: boolean,
    span: ProcessSpan | undefined,
    free: () => void,
  ): Promise<Handover | undefined> {
    const ctx = this.context(batch, claimedAt, batch.attempt, running.aborter);
    const started = performance.now();
    try {
      await this.deliveries.run(running, () => this.invoke(span, batch.messages, ctx), overdueHook(span, free));
    } catch (error) {
      if (error === ABANDONED) {
        span?.end('abandoned');
        return undefined;
      }
      const durationMs = performance.now() - started;
      // The lease was lost: the batch is another consumer's to finish.
      if (leaseLost(running)) {
        span?.leaseLost(error);
        return undefined;
      }
      span?.failed(error);
      const failing = this.fail(running, batch, ctx, durationMs, error, span);
      this.record('fail', span ? failing.finally(() => span.end('failed')) : failing, running);
      return undefined;
    }
    if (leaseLost(running)) {
      span?.leaseLost();
      return undefined;
    }
    span?.end('ack');
    const durationMs = performance.now() - started;
    return this.finish(running, more && !overdue(running), () => {
      if (this.events.has('batch.completed'))
        this.events.emit('batch.completed', this.describeBatch(batch, claimedAt, batch.attempt, durationMs));
    });
  }

  /**
   * Acknowledges an ordered delivery. Asking for the group's next batch (a slot that goes on), it
   * waits for the answer; otherwise the slot is free at once and the acknowledgement goes its way.
   */
  private async finish(running: RunningBatch, more: boolean, completed?: () => void): Promise<Handover | undefined> {
    const next = more && this.claiming;
    const acked = this.acknowledge(running.shard, running.delivery!, next);
    const recorded = completed ? acked.then((result) => result.dueAt !== null && completed()) : acked;
    this.record('ack', recorded, running);
    if (!next) return undefined;
    // A failure is logged by `record`; the group's lease returns it.
    const result = await acked.catch(() => undefined);
    return result?.next && { batch: result.next, claimedAt: result.serverNow };
  }

  private async fail(
    running: RunningBatch,
    batch: ClaimedBatch,
    ctx: BatchContext,
    durationMs: number,
    error: unknown,
    span: ProcessSpan | undefined,
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
      span?.event('retry', { 'messaging.nestjs_redis_queues.next_attempt_at': new Date(at).toISOString() });
      span?.end('retry');
      this.dueAt(shard, at);
      this.logger.warn(
        logLine(this.label, 'batch failed, will be delivered again', {
          ...fields,
          attempt: batch.attempt,
          nextAttemptAt: new Date(at).toISOString(),
        }),
      );
    } else if (outcome === 'dead') {
      span?.event('dead_letter');
      span?.end('dead');
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
  private async acknowledge(shard: number, delivery: Delivery, next: boolean): Promise<AckResult> {
    const result = await this.acks.add(shard, next ? { ...delivery, next } : delivery);
    const { dueAt, serverNow, expired } = result;
    if (expired > 0 && this.events.has('messages.expired'))
      this.events.emit('messages.expired', { queue: this.queue, group: delivery.group, count: expired });
    if (dueAt !== null && dueAt >= 0) {
      // Due now: the next poll claims it, rather than only listing it for the poll after.
      if (dueAt <= serverNow && !this.candidates[shard].includes(delivery.group))
        this.candidates[shard].push(delivery.group);
      this.dueAt(shard, dueAt, serverNow);
    }
    return result;
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
