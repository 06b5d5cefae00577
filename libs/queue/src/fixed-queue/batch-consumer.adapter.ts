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
import { HandlerContext, LazyAbort, leaseLost } from '../consumer/deliveries';
import type { FailedHook } from '../consumer/outcome-reporter';
import { RetryPolicy } from '../consumer/retry-policy';
import type { Claimed } from '../consumer/shard-poller';
import { PartialBatchError } from '../errors';
import type { QueueEvents } from '../events/queue-events';
import type { BatchContext, BatchEvent } from '../interfaces';
import { ShardBatcher } from '../redis/shard-batcher';
import { ATTRIBUTES, type ProcessSpan } from '../tracing/queue-tracer';
import { byShard } from '../utils/by-shard';
import { failureText } from '../utils/errors';
import type { BatchConsumerOptionsRules } from '../validation/consumer-options';
import { partialOutOfRange, retriesOnAtLeastOnce } from './fixed-queue.messages';
import { givenBackOverdue } from '../consumer/consumer.messages';
import type { FixedQueue } from './fixed-queue';
import type { Acknowledged, ClaimedBatch, GroupLease, FixedQueueStore } from './fixed-queue.store';

export type BatchHandler = (messages: unknown[], ctx: BatchContext) => unknown;
export type BatchFailureHandler = (error: unknown, messages: unknown[], ctx: BatchContext) => unknown;

/**
 * Largest batches handed over by acknowledgements. The script returns the entries itself, which pays
 * only while a claim call weighs more than the entries it carries: small batches, not large ones
 * (BENCHMARKS.md, "Figures behind the code": hand-over).
 */
const HANDOVER_MAX_BATCH = 16;

const ACKNOWLEDGED: DeliveryFate = Object.freeze({ type: 'acknowledged' });
const LEASE_LOST: DeliveryFate = Object.freeze({ type: 'lease-lost' });
const FAILED: DeliveryFate = Object.freeze({ type: 'failed' });
/** At-least-once: a stale acknowledgement (its token lost the group) means the lease was lost. */
const acknowledgedUnlessStale = (acked: boolean): DeliveryFate => (acked ? ACKNOWLEDGED : LEASE_LOST);

export interface BatchConsumerAdapterOptions {
  /** The queue's own store, options and name. */
  queue: Pick<FixedQueue, 'name' | 'store' | 'options'>;
  /** `Class.method` of the consumer. */
  label: string;
  options: BatchConsumerOptionsRules;
  handler: BatchHandler;
  /** The queue is traced: claims and acknowledgements bring the messages' trace contexts. */
  traced: boolean;
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

/** A claimed batch in a slot: one group's messages, and (ordered queues) its lease on the group. */
export class BatchDelivery implements OpenedDelivery {
  readonly aborter = new LazyAbort();
  span?: ProcessSpan;
  attempt: number;
  /** Ordered queues: its hold on the group, until acknowledged, failed or given back. */
  readonly lease: GroupLease | undefined;
  /** Messages a PartialBatchError of its handler acknowledged, from the first: `onFailed` gets the rest. */
  acknowledged = 0;

  constructor(
    readonly shard: number,
    readonly batch: ClaimedBatch,
    readonly claimedAt: number,
    private readonly adapter: BatchConsumerAdapter,
  ) {
    // At-most-once batches count their attempts in this process.
    this.attempt = adapter.atLeastOnce ? batch.attempt : 1;
    this.lease = batch.token === undefined ? undefined : { group: batch.group, token: batch.token };
  }

  get what(): string {
    return `batch of group "${this.batch.group}"`;
  }

  get subject(): { group: string } {
    return { group: this.batch.group };
  }

  call(): unknown {
    return this.adapter.handler(this.batch.messages, this.context());
  }

  /** The handler's context for the attempt under way (its signal is made when first asked for). */
  context(): BatchContext {
    return new Context(this.adapter.queue, this.batch, this.claimedAt, this.attempt, this.aborter);
  }

  fields(): { group: string; size: number } {
    return { group: this.batch.group, size: this.batch.messages.length };
  }

  event(): Omit<BatchEvent, 'durationMs'> {
    const { batch, claimedAt, attempt } = this;
    return {
      queue: this.adapter.queue,
      group: batch.group,
      size: batch.messages.length,
      attempts: attempt,
      claimedAt,
      consumer: this.adapter.label,
    };
  }

  trace() {
    const { batch } = this;
    return {
      attributes: {
        [ATTRIBUTES.group]: batch.group,
        [ATTRIBUTES.attempt]: batch.attempt,
        [ATTRIBUTES.expired]: batch.expired,
        'messaging.batch.message_count': batch.messages.length,
      },
      carriers: batch.carriers,
    };
  }
}

class Context extends HandlerContext implements BatchContext {
  readonly group: string;
  readonly expired: number;

  constructor(
    readonly queue: string,
    batch: ClaimedBatch,
    readonly claimedAt: number,
    readonly attempt: number,
    aborter: LazyAbort,
  ) {
    super(aborter);
    this.group = batch.group;
    this.expired = batch.expired;
  }
}

/**
 * How a `@BatchConsumer` consumes a FixedQueue: claims due batches (one group each); on ordered queues
 * a batch holds its group until acknowledged, under a lease, and an acknowledgement may hand the group's
 * next batch to the same slot. At-least-once: resolving acknowledges, throwing schedules the next
 * delivery of the same messages or buries them; at-most-once: the messages left Redis with the claim,
 * retries (`maxAttempts`) happen in this process and a failure after the last is only reported.
 */
export class BatchConsumerAdapter implements ConsumerAdapter<ClaimedBatch, BatchDelivery> {
  readonly kind = 'fixed';
  readonly reports = BATCH_REPORTS;
  readonly queue: string;
  readonly label: string;
  readonly handler: BatchHandler;
  readonly leaseMs: number;
  readonly atLeastOnce: boolean;
  readonly redeliversLapsed: boolean;
  readonly localRetries?: RetryPolicy;
  readonly extend?: (shard: number, deliveries: BatchDelivery[]) => Promise<boolean[]>;
  /** At-least-once: the wait before a failed batch is delivered again. */
  private readonly retry: RetryPolicy;
  private readonly store: FixedQueueStore;
  private readonly options: BatchConsumerOptionsRules;
  private readonly traced: boolean;
  private readonly batchSize: number;
  private readonly keepStack: boolean;
  /** Acknowledgements of ordered deliveries, one script call per shard and tick. */
  private readonly acks: ShardBatcher<Acknowledged, AckResult>;
  /** Per shard, the groups the last call listed as due. */
  private readonly candidates: string[][];

  constructor({ queue, label, options, handler, traced }: BatchConsumerAdapterOptions) {
    const queueOptions = queue.options;
    this.atLeastOnce = queueOptions.delivery === 'at-least-once';
    // At most once, the messages left Redis with the claim: late is better than never.
    this.redeliversLapsed = this.atLeastOnce;
    if (this.atLeastOnce && options.maxAttempts > 1) throw retriesOnAtLeastOnce(label, queue.name);
    this.queue = queue.name;
    this.label = label;
    this.handler = handler;
    this.store = queue.store;
    this.options = options;
    this.traced = traced;
    this.batchSize = queueOptions.batchSize;
    this.keepStack = queueOptions.deadLetter.keepStack;
    this.leaseMs = queueOptions.leaseMs;
    this.retry = new RetryPolicy(queueOptions.maxAttempts, queueOptions.backoff);
    if (!this.atLeastOnce && options.maxAttempts > 1)
      this.localRetries = new RetryPolicy(options.maxAttempts, options.backoff);
    // Only ordered deliveries hold their group under a lease.
    if (this.store.ordered)
      this.extend = (shard, running) =>
        this.store.extend(
          shard,
          running.map(({ lease }) => lease!),
        );
    this.candidates = Array.from({ length: queueOptions.shards }, () => []);
    this.acks = new ShardBatcher<Acknowledged, AckResult>(async (shard, deliveries) => {
      const { dueAt, serverNow, next, expired } = await this.store.ack(shard, deliveries, options.raw, traced);
      return dueAt.map((due, i) => ({ dueAt: due, serverNow, next: next[i], expired: expired[i] }));
    });
  }

  async claim(shard: number, limit: number): Promise<Claimed<ClaimedBatch>> {
    const candidates = this.candidates[shard];
    // Ordered: a group claimed by one poll is held, so a second poll of the shard under way with the
    // same candidates would only read their heads for nothing; it lists instead. (Unordered, it takes
    // the groups' next batches.)
    if (this.store.ordered) this.candidates[shard] = [];
    const taken = await this.store.take(shard, limit, candidates, this.options.raw, this.traced);
    this.candidates[shard] = taken.due;
    return {
      poll: taken,
      items: taken.batches.filter((batch) => batch.messages.length > 0),
      expired: taken.batches
        .filter((batch) => batch.expired > 0)
        .map(({ group, expired }) => ({ group, count: expired })),
      paused: taken.paused,
    };
  }

  open(shard: number, batch: ClaimedBatch, claimedAt: number): BatchDelivery {
    return new BatchDelivery(shard, batch, claimedAt, this);
  }

  settle(running: BatchDelivery, result: HandlerResult, next: boolean): Settlement<ClaimedBatch> {
    if (this.atLeastOnce) {
      // The lease was lost: the batch is another consumer's to finish.
      if (leaseLost(running)) return { recorded: Promise.resolve({ fate: LEASE_LOST }) };
      if (!result.ok) {
        const handled = this.handled(running, result.error);
        // Every message handled: the delivery is done, whatever the handler threw.
        if (handled.count < running.batch.messages.length)
          return { recorded: this.fail(running, result.error, handled) };
      }
      return this.acknowledge(running, next, acknowledgedUnlessStale);
    }
    // At-most-once: the messages left Redis with the claim, whatever happens to the group's lease.
    const recorded: RecordedFate = { fate: result.ok ? ACKNOWLEDGED : FAILED };
    if (!running.lease) return { recorded: Promise.resolve(recorded) };
    return this.acknowledge(running, next, () => recorded.fate);
  }

  /**
   * Ordered deliveries that shutdown abandoned let go of their groups at once instead of holding them
   * until their leases run out. At least once, due again, counted as an attempt where the handler was
   * past handlerTimeoutMs (see fixed-release.lua).
   */
  async giveBack(abandoned: Abandoned<BatchDelivery>[]): Promise<number> {
    const held = abandoned.filter(({ delivery }) => delivery.lease);
    const given = await Promise.all(
      [...byShard(held.map(({ delivery }) => delivery))].map(([shard, running]) => {
        const leases = running.map(({ lease }) => lease!);
        if (!this.atLeastOnce)
          return this.store
            .ack(shard, leases)
            .then(({ dueAt }) => dueAt.map((due) => due !== null))
            .catch(() => [] as boolean[]);
        const counted = new Set(held.filter((given) => given.counted).map((given) => given.delivery));
        const releases = running.map((delivery) => ({ ...delivery.lease!, counted: counted.has(delivery) }));
        return this.store.release(shard, releases, givenBackOverdue(this.label)).catch(() => [] as boolean[]);
      }),
    );
    return given.flat().filter(Boolean).length;
  }

  /**
   * Acknowledges an ordered delivery: the group is ready for its next batch, which this consumer, whose
   * slot just freed, polls for (no hint is published: other processes find the group by their own
   * polls). With `next`, the group's next batch due now is claimed for the same slot.
   */
  private acknowledge(
    running: BatchDelivery,
    next: boolean,
    fate: (acknowledged: boolean) => DeliveryFate,
  ): Settlement<ClaimedBatch> {
    const { shard } = running;
    const held = running.lease!;
    const handover = next && this.batchSize <= HANDOVER_MAX_BATCH;
    const acked = this.acks.add(shard, handover ? { group: held.group, token: held.token, next: true } : held);
    return {
      recorded: acked.then(({ dueAt, serverNow, expired }) => {
        if (dueAt !== null && dueAt >= 0 && dueAt <= serverNow) {
          // Due now: the next poll claims it, rather than only listing it for the poll after.
          const candidates = this.candidates[shard];
          if (!candidates.includes(held.group)) candidates.push(held.group);
        }
        const recorded: RecordedFate = { fate: fate(dueAt !== null) };
        if (expired > 0) recorded.expired = { group: held.group, count: expired };
        if (dueAt !== null && dueAt >= 0) recorded.due = { at: dueAt, serverNow };
        return recorded;
      }),
      ...(handover && {
        next: acked.then((result) => result.next && { item: result.next, claimedAt: result.serverNow }),
      }),
    };
  }

  /**
   * How many of a failed delivery's messages its handler handled, from the first: what a
   * PartialBatchError says, when it names part of the batch (otherwise none, and why not).
   */
  private handled(running: BatchDelivery, error: unknown): { count: number; ignoredAnswer?: string } {
    if (!(error instanceof PartialBatchError)) return { count: 0 };
    const { acknowledged } = error;
    const size = running.batch.messages.length;
    if (Number.isInteger(acknowledged) && acknowledged >= 0 && acknowledged <= size) return { count: acknowledged };
    return { count: 0, ignoredAnswer: partialOutOfRange(acknowledged, size) };
  }

  private async fail(
    running: BatchDelivery,
    error: unknown,
    handled: { count: number; ignoredAnswer?: string },
  ): Promise<RecordedFate> {
    const { fate, at, acknowledged } = await this.store.fail(
      running.shard,
      running.lease!,
      this.retry.delayAfter(running.attempt),
      failureText(error, this.keepStack),
      { handled: handled.count, size: running.batch.messages.length },
    );
    running.acknowledged = acknowledged;
    const { ignoredAnswer } = handled;
    const ignored = ignoredAnswer === undefined ? {} : { ignoredAnswer };
    if (fate === 'retry' || fate === 'dead') return { fate: { type: fate, at, acknowledged }, due: { at }, ...ignored };
    // Its group is out of the ready index until resumeGroup, which wakes the consumers itself.
    if (fate === 'paused') return { fate: { type: fate, at, acknowledged, group: running.batch.group }, ...ignored };
    return { fate: LEASE_LOST, ...ignored };
  }
}

/**
 * What a batch's outcomes say. A batch has no event of its start, nor of a retry (its log line says
 * it): its last attempt's failure, dead-lettered or not, is `batch.failed`.
 */
const BATCH_REPORTS: DeliveryReports<BatchDelivery> = {
  words: {
    retry: 'batch failed, will be delivered again',
    nextAt: 'nextAttemptAt',
    dead: 'batch failed its last attempt and is dead-lettered',
    failed: 'batch failed after its last attempt',
  },
  completed(events, batch, durationMs) {
    if (events.has('batch.completed')) events.emit('batch.completed', { ...batch.event(), durationMs });
  },
  dead: batchFailed,
  failed: batchFailed,
};

function batchFailed(events: QueueEvents, batch: BatchDelivery, durationMs: number, error: unknown): void {
  if (events.has('batch.failed')) events.emit('batch.failed', { ...batch.event(), durationMs, error });
}

/** A `@BatchConsumer`'s `onFailed` hook, given the batch's messages and its last attempt's context. */
export function batchFailedHook(onFailed: BatchFailureHandler): FailedHook<BatchDelivery> {
  return (error, delivery) => onFailed(error, delivery.batch.messages.slice(delivery.acknowledged), delivery.context());
}
