import type { Logger } from '@nestjs/common';
import type { QueueEvents } from '../events/queue-events';
import type { BatchEvent, ConsumerErrorEvent, QueueKind, TaskEvent } from '../interfaces';
import { ATTRIBUTES, type QueueTracer } from '../tracing/queue-tracer';
import { describeError } from '../utils/errors';
import { logLine } from '../utils/log-line';
import { RepeatedFailure } from '../utils/repeated-failure';
import type { DeliveryOutcome, HandlerResult, OpenedDelivery, Settled } from './consumer-adapter';

/** A consumer's failed deliveries, once no attempt is left: its `onFailed` hook, bound to its own arguments. */
export type FailedHook<D> = (error: unknown, delivery: D) => unknown;

export interface OutcomeReporterOptions<D> {
  queue: string;
  kind: QueueKind;
  /** `Class.method` of the consumer. */
  label: string;
  logger: Logger;
  events: QueueEvents;
  /** The queue is traced: a process span per delivery. */
  tracer?: QueueTracer;
  onFailed?: FailedHook<D>;
}

/** What each kind calls its deliveries in log lines. */
const WORDS = {
  fixed: {
    retry: 'batch failed, will be delivered again',
    next: 'nextAttemptAt',
    dead: 'batch failed its last attempt and is dead-lettered',
    failed: 'batch failed after its last attempt',
  },
  delay: {
    retry: 'task failed, will retry',
    next: 'nextRunAt',
    dead: 'task failed its last attempt and is dead-lettered',
    failed: 'repeat occurrence failed its last attempt; the schedule goes on',
  },
} as const;

/**
 * Everything a consumer says about its deliveries, in one place: each delivery's process span, its
 * outcome turned into the span's end, the event (and so the metrics), the log line and `onFailed`; and
 * the consumer's own troubles (claims failing, leases lost or not extended, handlers past their
 * deadline, outcomes Redis did not take).
 */
export class OutcomeReporter<D extends OpenedDelivery> {
  private readonly words: (typeof WORDS)[QueueKind];
  /** Every shard's poll fails while Redis is away, each retrying with backoff: one account of it for all. */
  private readonly claimFailures: RepeatedFailure;

  constructor(private readonly options: OutcomeReporterOptions<D>) {
    const { label, logger } = options;
    this.words = WORDS[options.kind];
    this.claimFailures = new RepeatedFailure({
      first: (error) => logger.warn(logLine(label, 'could not claim, retrying', { error })),
      summary: (count, sinceMs, error) =>
        logger.warn(logLine(label, 'still cannot claim, retrying', { failures: count, forMs: sinceMs, error })),
      recovered: (count, sinceMs) => logger.log(logLine(label, 'claiming again', { failures: count, forMs: sinceMs })),
    });
  }

  /** A handler is about to run: its span begins (traced queues), a task's `task.fired`. */
  started(delivery: D): void {
    const { tracer, events } = this.options;
    if (tracer) {
      const { attributes, carriers, parent } = delivery.trace();
      delivery.span = tracer.process(attributes, carriers, parent);
    }
    if (this.options.kind === 'delay' && events.has('task.fired'))
      events.emit('task.fired', delivery.event() as TaskEvent);
  }

  /** An in-process attempt failed and the next follows. */
  retrying(delivery: D, error: unknown): void {
    delivery.span?.retrying(error, { [ATTRIBUTES.attempt]: delivery.attempt });
  }

  /**
   * What became of a delivery, once its adapter recorded it. Resolves once its `onFailed` hook (if
   * any) has run.
   */
  settled(
    delivery: D,
    result: HandlerResult,
    { outcome, expired, refused }: Settled,
    durationMs: number,
  ): void | Promise<void> {
    const { span, attempt } = delivery;
    if (expired && 'group' in delivery.subject) this.expired(delivery.subject.group, expired);
    if (refused !== undefined) this.options.logger.error(logLine(this.options.label, refused, delivery.fields()));
    const error = result.ok ? undefined : result.error;
    if (span && !result.ok && outcome.type !== 'lease-lost') span.failed(error);
    switch (outcome.type) {
      case 'acknowledged':
        span?.end('ack', { [ATTRIBUTES.attempt]: attempt });
        this.emit('completed', delivery, { durationMs });
        return;
      case 'retry': {
        const nextAt = new Date(outcome.at).toISOString();
        span?.event('retry', { 'messaging.nestjs_redis_queues.next_attempt_at': nextAt });
        span?.end('retry');
        this.log('warn', this.words.retry, delivery, { ...partOf(outcome), [this.words.next]: nextAt }, error);
        this.emit('retry', delivery, { durationMs, error, nextRunAt: outcome.at });
        return;
      }
      case 'dead':
        span?.event('dead_letter');
        span?.end('dead');
        this.log('error', this.words.dead, delivery, partOf(outcome), error);
        this.emit('dead', delivery, { durationMs, error, diedAt: outcome.at });
        return this.failedForGood(delivery, error);
      case 'paused':
        span?.event('group_paused');
        span?.end('paused');
        // Only batches have a group to pause.
        this.log(
          'warn',
          'batch failed its last attempt; its group is paused with it at its head until resumeGroup',
          delivery,
          partOf(outcome),
          error,
        );
        if ('group' in delivery.subject) this.groupPaused(delivery.subject.group);
        return;
      case 'failed': {
        span?.end('failed', { [ATTRIBUTES.attempt]: attempt });
        const { nextRunAt } = outcome;
        this.log(
          'error',
          this.words.failed,
          delivery,
          nextRunAt === undefined ? {} : { nextRunAt: new Date(nextRunAt).toISOString() },
          error,
        );
        this.emit('failed', delivery, { durationMs, error, nextRunAt });
        return this.failedForGood(delivery, error);
      }
      case 'lease-lost':
        return span?.leaseLost(error);
      case 'given-back':
        return span?.end('abandoned');
      case 'skipped':
        return;
    }
  }

  /** Redis did not take a delivery's outcome: its lease will settle its fate without it. */
  unrecorded(delivery: D, result: HandlerResult, error: unknown): void {
    delivery.span?.end(result.ok ? 'ack' : 'failed');
    const operation = result.ok ? 'ack' : 'fail';
    this.options.logger.warn(
      logLine(this.options.label, `could not record the ${operation} of the ${delivery.what}`, {
        error: describeError(error),
      }),
    );
    this.consumerError(operation, error);
  }

  /** A handler ran past `handlerTimeoutMs`: its signal is aborted, its slot freed, its delivery still held. */
  overdue(delivery: D, timeoutMs: number): void {
    const { logger, label, events, queue } = this.options;
    delivery.span?.event('handler_timeout');
    logger.warn(
      logLine(
        label,
        `handler did not settle in time; its signal is aborted and its slot freed, the ${delivery.what} stays held until it settles`,
        { ...delivery.subject, handlerTimeoutMs: timeoutMs },
      ),
    );
    if (events.has('handler.timeout'))
      events.emit('handler.timeout', { queue, consumer: label, timeoutMs, ...delivery.subject });
  }

  settledLate(delivery: D, overdueMs: number): void {
    this.options.logger.log(
      logLine(this.options.label, `overdue handler settled; the ${delivery.what} is let go`, {
        ...delivery.subject,
        overdueMs: Math.round(overdueMs),
      }),
    );
  }

  /** The heartbeat found a lease lost (another consumer may have the delivery now). */
  leaseLost(delivery: D): void {
    this.options.logger.warn(
      logLine(this.options.label, `lost the lease of the ${delivery.what} (another consumer may have it now)`),
    );
  }

  /** Its lease ran out `lapsedMs` ago, before its handler could start: it is not run here. */
  lapsedBeforeStart(delivery: D, lapsedMs: number): void {
    this.options.logger.warn(
      logLine(
        this.options.label,
        `did not start the ${delivery.what}: its lease had run out ${Math.round(lapsedMs)} ms before (was this process paused or starved?); it is delivered again to whoever claims it now`,
      ),
    );
  }

  extendFailed(error: unknown, count: number): void {
    this.options.logger.warn(
      logLine(this.options.label, 'could not extend leases', { count, error: describeError(error) }),
    );
    this.consumerError('extend', error);
  }

  claimFailed(error: unknown): void {
    this.claimFailures.failed(describeError(error));
    this.consumerError('claim', error);
  }

  claimSucceeded(): void {
    this.claimFailures.succeeded();
  }

  /** Messages of a group discarded for age (at a claim, or an acknowledgement that handed the next batch). */
  expired(group: string, count: number): void {
    const { events, queue } = this.options;
    if (events.has('messages.expired')) events.emit('messages.expired', { queue, group, count });
  }

  /**
   * A claim paused a group because the lease of its batch's last attempt ran out (its consumer stopped,
   * stalled, or shut down with its handler past its deadline): said as a failed last attempt's pause is.
   */
  lapsedGroupPaused(group: string): void {
    this.options.logger.warn(
      logLine(
        this.options.label,
        "batch's last attempt did not settle before its lease ran out; its group is paused with it at its head until resumeGroup",
        { group },
      ),
    );
    this.groupPaused(group);
  }

  /** A group paused because its batch failed its last attempt (onExhausted: 'pause-group'). */
  private groupPaused(group: string): void {
    const { events, queue } = this.options;
    if (events.has('group.paused')) events.emit('group.paused', { queue, group, reason: 'exhausted' });
  }

  /** Shutdown gave `count` deliveries back, `counted` of them as attempts (handlers past their deadline). */
  gaveBack(count: number, counted: number): void {
    this.options.logger.warn(
      logLine(this.options.label, 'gave unfinished work back to the queue for another consumer', {
        count,
        ...(counted > 0 && { countedAsAttempts: counted }),
      }),
    );
  }

  /** Lines about the consumer itself (stalls and their end). */
  warn(what: string): void {
    this.options.logger.warn(logLine(this.options.label, what));
  }

  note(what: string): void {
    this.options.logger.log(logLine(this.options.label, what));
  }

  private log(
    level: 'warn' | 'error',
    what: string,
    delivery: D,
    extra: Record<string, string | number>,
    error: unknown,
  ): void {
    const fields = { ...delivery.fields(), attempt: delivery.attempt, ...extra, error: describeError(error) };
    this.options.logger[level](logLine(this.options.label, what, fields));
  }

  /** The event of an outcome, in its kind's words (a batch's retry has none: its log line says it). */
  private emit(
    outcome: 'completed' | 'retry' | 'dead' | 'failed',
    delivery: D,
    extra: { durationMs: number; error?: unknown; nextRunAt?: number; diedAt?: number },
  ): void {
    const { events } = this.options;
    if (this.options.kind === 'fixed') {
      if (outcome === 'retry') return;
      const name = outcome === 'completed' ? 'batch.completed' : 'batch.failed';
      if (!events.has(name)) return;
      const base = delivery.event() as BatchEvent;
      const event = { ...base, durationMs: extra.durationMs };
      if (name === 'batch.completed') events.emit(name, event);
      else events.emit(name, { ...event, error: extra.error });
      return;
    }
    const { durationMs, error, nextRunAt, diedAt } = extra;
    const base = delivery.event() as TaskEvent;
    if (outcome === 'completed') {
      if (events.has('task.completed')) events.emit('task.completed', { ...base, durationMs });
    } else if (outcome === 'dead') {
      if (events.has('task.dead')) events.emit('task.dead', { ...base, durationMs, error, diedAt: diedAt! });
    } else if (nextRunAt !== undefined && events.has('task.failed')) {
      events.emit('task.failed', { ...base, durationMs, error, nextRunAt });
    }
  }

  private async failedForGood(delivery: D, error: unknown): Promise<void> {
    const { onFailed } = this.options;
    if (!onFailed) return;
    try {
      await onFailed(error, delivery);
    } catch (hookError) {
      this.options.logger.error(
        logLine(this.options.label, 'onFailed hook threw', {
          ...delivery.fields(),
          error: describeError(hookError),
        }),
      );
    }
  }

  consumerError(operation: ConsumerErrorEvent['operation'], error: unknown): void {
    const { events, queue, label } = this.options;
    if (events.has('consumer.error')) events.emit('consumer.error', { queue, consumer: label, operation, error });
  }
}

/** Part of a failed batch handled all the same (PartialBatchError): its lines say how much. */
function partOf(outcome: DeliveryOutcome): Record<string, number> {
  return 'acknowledged' in outcome && outcome.acknowledged ? { acknowledged: outcome.acknowledged } : {};
}
