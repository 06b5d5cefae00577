import { Injectable, type InjectionToken, Logger } from '@nestjs/common';
import { ModuleRef } from '@nestjs/core';
import type { ConsumerAdapter, OpenedDelivery } from './consumer/consumer-adapter';
import { ConsumerRuntime } from './consumer/consumer-runtime';
import type { Consumer } from './consumer/consumer.registry';
import { ConsumerSchedule } from './consumer/consumer-schedule';
import { OutcomeReporter, type FailedHook } from './consumer/outcome-reporter';
import { DelayConsumerAdapter, type DelayHandler } from './delay-queue/delay-consumer.adapter';
import { DelayQueue } from './delay-queue/delay-queue';
import type { BatchConsumerMetadata, DelayConsumerMetadata } from './decorators';
import { QueueEvents } from './events/queue-events';
import { BatchConsumerAdapter, batchFailedHook, type BatchFailureHandler } from './fixed-queue/batch-consumer.adapter';
import { FixedQueue } from './fixed-queue/fixed-queue';
import type { ConsumerOptionsFactory, QueueKind } from './interfaces';
import { getDelayQueueToken, getFixedQueueToken } from './queue.constants';
import type { FoundMethod } from './queue.explorer';
import {
  factoryNotFunction,
  factoryThrew,
  injectMissing,
  injectNotArray,
  notAMethod,
  replacedQueue,
} from './queue.messages';
import { QueueRegistry } from './queue.registry';
import { QueueSettings } from './queue.settings';
import { QueueTracer } from './tracing/queue-tracer';
import { RedisConnection } from './redis/redis-connection';
import type { WakeHints } from './redis/wake-hints';
import { describeError } from './utils/errors';
import { queueLogContext } from './utils/log-line';
import { resolveOptions } from './validation/apply-rules';
import { DelayConsumerOptionsRules, resolveBatchConsumerOptions } from './validation/consumer-options';

type Method = (...args: unknown[]) => unknown;

/**
 * Builds the consumer of a method the explorer found (`@BatchConsumer`, `@DelayConsumer`), or of a
 * schedule's queue for RecurringMounter: its queue's kind's adapter (from the queue's own
 * store and options) composed with the consumer runtime and an outcome reporter, after its options
 * (written out, or made by their `useFactory` at start-up) are checked. A queue replaced by a provider
 * override is not consumed (undefined).
 */
@Injectable()
export class ConsumerFactory {
  private readonly logger = new Logger('QueueModule');

  constructor(
    private readonly queues: QueueRegistry,
    private readonly connection: RedisConnection,
    private readonly settings: QueueSettings,
    private readonly events: QueueEvents,
    private readonly moduleRef: ModuleRef,
  ) {}

  async batchConsumer(found: FoundMethod<BatchConsumerMetadata>): Promise<Consumer | undefined> {
    const { instance, label, metadata } = found;
    const where = `@BatchConsumer on ${label}`;
    const queue = this.consumedQueue('fixed', metadata.queue, label, FixedQueue<unknown>);
    const options = resolveBatchConsumerOptions(await this.decoratorOptions(metadata.options, where), where, (m) =>
      this.logger.warn(m),
    );
    if (!queue) return undefined;
    let onFailed: BatchFailureHandler | undefined;
    if (typeof options.onFailed === 'string') {
      if (typeof (instance as Record<string, unknown>)[options.onFailed] !== 'function') {
        throw notAMethod(where, options.onFailed, instance.constructor?.name);
      }
      onFailed = bound(instance, options.onFailed);
    } else if (typeof options.onFailed === 'function') {
      onFailed = (options.onFailed as BatchFailureHandler).bind(instance);
    }
    // A producer-only process need not have @nestjs/schedule: checked only where consumers run.
    const scheduled = this.settings.consumers && (options.cron !== undefined || options.intervalMs !== undefined);
    const schedule = scheduled
      ? ConsumerSchedule.create(this.moduleRef, options, options.name ?? `nrq:${metadata.queue}:${label}`, {
          queue: metadata.queue,
          label,
        })
      : undefined;
    const tracer = this.tracer('fixed', queue);
    const adapter = new BatchConsumerAdapter({
      queue,
      label,
      options,
      handler: bound(instance, found.method),
      traced: tracer !== undefined,
    });
    return this.runtime(queue, label, options, adapter, tracer, onFailed && batchFailedHook(onFailed), schedule);
  }

  async delayConsumer(found: FoundMethod<DelayConsumerMetadata>): Promise<Consumer | undefined> {
    const { instance, label, metadata } = found;
    const where = `@DelayConsumer on ${label}`;
    const queue = this.consumedQueue('delay', metadata.queue, label, DelayQueue<unknown>);
    const options = await this.decoratorOptions(metadata.options, where);
    if (!queue) {
      resolveOptions(DelayConsumerOptionsRules, options, where);
      return undefined;
    }
    return this.delayQueueConsumer(queue, label, options, bound(instance, found.method));
  }

  /**
   * The consumer of a DelayQueue, running `handler` for each task: a `@DelayConsumer`'s, or the one
   * RecurringMounter gives each schedule's queue.
   */
  delayQueueConsumer(queue: DelayQueue<unknown>, label: string, raw: unknown, handler: DelayHandler): Consumer {
    const options = resolveOptions(DelayConsumerOptionsRules, raw, `@DelayConsumer on ${label}`);
    const adapter = new DelayConsumerAdapter({ queue, clock: this.connection.clock, label, options, handler });
    return this.runtime(queue, label, options, adapter, this.tracer('delay', queue));
  }

  private runtime<I, D extends OpenedDelivery>(
    queue: { name: string; options: { shards: number }; hints: WakeHints },
    label: string,
    options: { concurrency: number; handlerTimeoutMs: number },
    adapter: ConsumerAdapter<I, D>,
    tracer: QueueTracer | undefined,
    onFailed?: FailedHook<D>,
    schedule?: ConsumerSchedule,
  ): Consumer {
    const reporter = new OutcomeReporter<D>({
      queue: queue.name,
      reports: adapter.reports,
      label,
      logger: new Logger(queueLogContext(queue.name)),
      events: this.events,
      tracer,
      onFailed,
    });
    return new ConsumerRuntime<I, D>({
      queue: queue.name,
      shards: queue.options.shards,
      label,
      adapter,
      reporter,
      connection: this.connection,
      hints: queue.hints,
      concurrency: options.concurrency,
      handlerTimeoutMs: options.handlerTimeoutMs,
      idlePollMs: this.settings.idlePollMs,
      schedule,
    });
  }

  /**
   * The queue a consumer or listener names: registered, or provided under its token by something else
   * (a test's `overrideProvider(getDelayQueueToken(name))`), which is found but not consumed.
   * Neither: UnknownQueueError.
   */
  queueOf(kind: QueueKind, name: string): unknown {
    if (this.queues.has(kind, name)) return this.queues.get(kind, name);
    let provided: unknown;
    try {
      provided = this.moduleRef.get(kind === 'fixed' ? getFixedQueueToken(name) : getDelayQueueToken(name), {
        strict: false,
      });
    } catch {
      return this.queues.get(kind, name);
    }
    return provided ?? {};
  }

  /** The spans of a consumer of a traced queue. */
  private tracer(kind: QueueKind, queue: { name: string; options: { tracing?: boolean } }): QueueTracer | undefined {
    return (queue.options.tracing ?? this.settings.tracing) ? new QueueTracer(queue.name, kind) : undefined;
  }

  /** A consumer's queue, or undefined (logged) when a provider override replaced it with something else. */
  private consumedQueue<Q>(kind: QueueKind, name: string, label: string, type: abstract new (...args: never[]) => Q) {
    const queue = this.queueOf(kind, name);
    if (queue instanceof type) return queue;
    this.logger.log(replacedQueue(kind, name, label));
    return undefined;
  }

  /** Decorator options, with what their `useFactory` makes of the providers `inject` lists laid over them. */
  async decoratorOptions(raw: unknown, where: string): Promise<unknown> {
    if (raw === null || typeof raw !== 'object' || !('useFactory' in raw)) return raw;
    const { inject = [], useFactory, ...written } = raw as ConsumerOptionsFactory<object>;
    if (typeof useFactory !== 'function') throw factoryNotFunction(where);
    if (!Array.isArray(inject)) throw injectNotArray(where);
    const dependencies = inject.map((token: InjectionToken) => {
      try {
        return this.moduleRef.get(token, { strict: false });
      } catch (error) {
        throw injectMissing(where, typeof token === 'function' ? token.name : String(token), error);
      }
    });
    let made: unknown;
    try {
      made = await useFactory(...dependencies);
    } catch (error) {
      throw factoryThrew(where, describeError(error), error);
    }
    // Anything but an object goes on to validation, which says what it got.
    return made !== null && typeof made === 'object' ? { ...written, ...made } : made;
  }
}

/** `instance[method]` bound to its instance; the explorer found it to be a method. */
export function bound(instance: object, method: string): Method {
  return ((instance as Record<string, Method>)[method] as Method).bind(instance);
}
