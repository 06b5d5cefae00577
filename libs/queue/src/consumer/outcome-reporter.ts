import type { Logger } from '@nestjs/common';
import type { QueueEvents } from '../events/queue-events';
import type { ConsumerErrorEvent } from '../interfaces';
import { ATTRIBUTES, type QueueTracer } from '../tracing/queue-tracer';
import { describeError } from '../utils/errors';
import { logLine } from '../utils/log-line';
import { RepeatedFailure } from '../utils/repeated-failure';
import type { DeliveryFate, DeliveryReports, HandlerResult, OpenedDelivery, RecordedFate } from './consumer-adapter';

/** A consumer's failed deliveries, once no attempt is left: its `onFailed` hook, bound to its own arguments. */
export type FailedHook<D> = (error: unknown, delivery: D) => unknown;

export interface OutcomeReporterOptions<D> {
  queue: string;
  /** Its kind's events and words (the adapter's). */
  reports: DeliveryReports<D>;
  /** `Class.method` of the consumer. */
  label: string;
  logger: Logger;
  events: QueueEvents;
  /** The queue is traced: a process span per delivery. */
  tracer?: QueueTracer;
  onFailed?: FailedHook<D>;
}

/**
 * Everything a consumer says about its deliveries, in one place: each delivery's process span, its
 * outcome turned into the span's end, the event (and so the metrics), the log line and `onFailed`; and
 * the consumer's own troubles (claims failing, leases lost or not extended, handlers past their
 * deadline, outcomes Redis did not take).
 */
export class OutcomeReporter<D extends OpenedDelivery> {
  private readonly reports: DeliveryReports<D>;
  /** Every shard's poll fails while Redis is away, each retrying with backoff: one account of it for all. */
  private readonly claimFailures: RepeatedFailure;

  constructor(private readonly options: OutcomeReporterOptions<D>) {
    const { label, logger } = options;
    this.reports = options.reports;
    this.claimFailures = new RepeatedFailure({
      first: (error) => logger.warn(logLine(label, 'could not claim, retrying', { error })),
      summary: (count, sinceMs, error) =>
        logger.warn(logLine(label, 'still cannot claim, retrying', { failures: count, forMs: sinceMs, error })),
      recovered: (count, sinceMs) => logger.log(logLine(label, 'claiming again', { failures: count, forMs: sinceMs })),
    });
  }

  /** A handler is about to run: its span begins (traced queues), and its kind's event if it has one. */
  started(delivery: D): void {
    const { tracer, events } = this.options;
    if (tracer) {
      const { attributes, carriers, parent } = delivery.trace();
      delivery.span = tracer.process(attributes, carriers, parent);
    }
    this.reports.started?.(events, delivery);
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
    { fate, expired, ignoredAnswer }: RecordedFate,
    durationMs: number,
  ): void | Promise<void> {
    const { span, attempt } = delivery;
    const { events } = this.options;
    const { reports } = this;
    if (expired) this.expired(expired.group, expired.count);
    if (ignoredAnswer !== undefined)
      this.options.logger.error(logLine(this.options.label, ignoredAnswer, delivery.fields()));
    const error = result.ok ? undefined : result.error;
    if (span && !result.ok && fate.type !== 'lease-lost') span.failed(error);
    switch (fate.type) {
      case 'acknowledged':
        span?.end('ack', { [ATTRIBUTES.attempt]: attempt });
        reports.completed(events, delivery, durationMs);
        return;
      case 'retry': {
        const nextAt = new Date(fate.at).toISOString();
        span?.event('retry', { 'messaging.nestjs_redis_queues.next_attempt_at': nextAt });
        span?.end('retry');
        this.log('warn', reports.words.retry, delivery, { ...partOf(fate), [reports.words.nextAt]: nextAt }, error);
        reports.retry?.(events, delivery, durationMs, error, fate.at);
        return;
      }
      case 'dead':
        span?.event('dead_letter');
        span?.end('dead');
        this.log('error', reports.words.dead, delivery, partOf(fate), error);
        reports.dead(events, delivery, durationMs, error, fate.at);
        return this.failedForGood(delivery, error);
      case 'paused':
        span?.event('group_paused');
        span?.end('paused');
        this.log(
          'warn',
          'batch failed its last attempt; its group is paused with it at its head until resumeGroup',
          delivery,
          partOf(fate),
          error,
        );
        this.groupPaused(fate.group);
        return;
      case 'failed': {
        span?.end('failed', { [ATTRIBUTES.attempt]: attempt });
        const { nextRunAt } = fate;
        this.log(
          'error',
          reports.words.failed,
          delivery,
          nextRunAt === undefined ? {} : { nextRunAt: new Date(nextRunAt).toISOString() },
          error,
        );
        reports.failed(events, delivery, durationMs, error, nextRunAt);
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

  /** A fault of the consumer itself, with what was thrown. */
  error(what: string, error: unknown): void {
    this.options.logger.error(logLine(this.options.label, what, { error: describeError(error) }));
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
function partOf(fate: DeliveryFate): Record<string, number> {
  return 'acknowledged' in fate && fate.acknowledged ? { acknowledged: fate.acknowledged } : {};
}
