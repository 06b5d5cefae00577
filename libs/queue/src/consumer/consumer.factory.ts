import { Injectable, type InjectionToken, Logger } from '@nestjs/common';
import { ModuleRef } from '@nestjs/core';
import { DelayConsumerWorker } from '../delay-queue/delay-consumer.worker';
import { DelayQueue } from '../delay-queue/delay-queue';
import type { BatchConsumerMetadata, DelayConsumerMetadata } from '../decorators';
import { QueueConfigError } from '../errors';
import { QueueEvents } from '../events/queue-events';
import { BatchConsumerWorker, type BatchFailureHandler } from '../fixed-queue/batch-consumer.worker';
import { FixedQueue } from '../fixed-queue/fixed-queue';
import type { ConsumerOptionsFactory, QueueKind } from '../interfaces';
import { getDelayQueueToken, getFixedQueueToken } from '../queue.constants';
import type { FoundMethod } from '../queue.explorer';
import { replacedQueue } from '../queue.messages';
import { QueueRegistry } from '../queue.registry';
import { QueueSettings } from '../queue.settings';
import { QueueTracer } from '../tracing/queue-tracer';
import { QueueKeys } from '../redis/keys';
import { RedisConnection } from '../redis/redis-connection';
import type { WakeHints } from '../redis/wake-hints';
import { describeError } from '../utils/errors';
import { queueLogContext } from '../utils/log-line';
import {
  BatchConsumerOptionsRules,
  batchConsumerChecks,
  DelayConsumerOptionsRules,
  resolveOptions,
} from '../validation/queue-options';
import { ConsumerSchedule } from './consumer-schedule';
import type { ConsumerDependencies } from './queue-consumer';

type Method = (...args: unknown[]) => unknown;

/**
 * Builds the consumer of a method the explorer found, from the connection, its queue's name and
 * options, and its own options (written out, or made by their `useFactory` at start-up), checked
 * before anything starts. A queue replaced by a provider override is not consumed (undefined).
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

  async batchConsumer(found: FoundMethod<BatchConsumerMetadata>): Promise<BatchConsumerWorker | undefined> {
    const { instance, label, metadata } = found;
    const where = `@BatchConsumer on ${label}`;
    const queue = this.consumedQueue('fixed', metadata.queue, label, FixedQueue<unknown>);
    const options = resolveOptions(
      BatchConsumerOptionsRules,
      await this.decoratorOptions(metadata.options, where),
      where,
      batchConsumerChecks,
    );
    if (!queue) return undefined;
    let onFailed: BatchFailureHandler | undefined;
    if (typeof options.onFailed === 'string') {
      if (typeof (instance as Record<string, unknown>)[options.onFailed] !== 'function') {
        throw new QueueConfigError(
          `${where}: onFailed names "${options.onFailed}", which is not a method of ${instance.constructor?.name}`,
        );
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
    return new BatchConsumerWorker({
      ...this.dependencies(queue, label),
      schedule,
      queueOptions: queue.options,
      options,
      handler: bound(instance, found.method),
      onFailed,
      tracer: this.tracer('fixed', queue),
    });
  }

  async delayConsumer(found: FoundMethod<DelayConsumerMetadata>): Promise<DelayConsumerWorker | undefined> {
    const { instance, label, metadata } = found;
    const where = `@DelayConsumer on ${label}`;
    const queue = this.consumedQueue('delay', metadata.queue, label, DelayQueue<unknown>);
    const options = resolveOptions(
      DelayConsumerOptionsRules,
      await this.decoratorOptions(metadata.options, where),
      where,
    );
    if (!queue) return undefined;
    return new DelayConsumerWorker({
      ...this.dependencies(queue, label),
      queueOptions: queue.options,
      options,
      handler: bound(instance, found.method),
      tracer: this.tracer('delay', queue),
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

  private dependencies(
    queue: { name: string; options: { shards: number }; hints: WakeHints },
    label: string,
  ): Omit<ConsumerDependencies, 'options'> {
    return {
      connection: this.connection,
      events: this.events,
      logger: new Logger(queueLogContext(queue.name)),
      queue: queue.name,
      shards: queue.options.shards,
      keys: new QueueKeys(this.settings.prefix, queue.name, queue.options.shards),
      hints: queue.hints,
      label,
      idlePollMs: this.settings.idlePollMs,
    };
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
    if (typeof useFactory !== 'function') throw new QueueConfigError(`${where}: useFactory must be a function`);
    if (!Array.isArray(inject)) throw new QueueConfigError(`${where}: inject must be an array of providers`);
    const dependencies = inject.map((token: InjectionToken) => {
      try {
        return this.moduleRef.get(token, { strict: false });
      } catch (error) {
        throw new QueueConfigError(
          `${where}: inject lists ${typeof token === 'function' ? token.name : String(token)}, which no module of the application provides`,
          { cause: error },
        );
      }
    });
    let made: unknown;
    try {
      made = await useFactory(...dependencies);
    } catch (error) {
      throw new QueueConfigError(`${where}: the options' useFactory threw: ${describeError(error)}`, { cause: error });
    }
    // Anything but an object goes on to validation, which says what it got.
    return made !== null && typeof made === 'object' ? { ...written, ...made } : made;
  }
}

/** `instance[method]` bound to its instance; the explorer found it to be a method. */
export function bound(instance: object, method: string): Method {
  return ((instance as Record<string, Method>)[method] as Method).bind(instance);
}
