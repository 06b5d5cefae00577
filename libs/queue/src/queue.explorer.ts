/* eslint-disable @typescript-eslint/no-explicit-any, @typescript-eslint/no-require-imports -- until the explorer is split into discovery and orchestration */
import { BeforeApplicationShutdown, Injectable, Logger, OnApplicationBootstrap, OnModuleInit } from '@nestjs/common';
import { DiscoveryService, MetadataScanner, ModuleRef } from '@nestjs/core';
import { createRequire } from 'node:module';
import { QueueConfigError } from './errors';
import type { FixedQueue } from './fixed-queue/fixed-queue';
import { describeError } from './utils/errors';
import { queueLogContext } from './utils/log-line';
import { BatchConsumerWorker, type BatchFailureHandler } from './fixed-queue/batch-consumer.worker';
import { DelayConsumerWorker } from './delay-queue/delay-consumer.worker';
import type { DelayQueue } from './delay-queue/delay-queue';
import { QUEUE_EVENT_NAMES, QueueEvents } from './events/queue-events';
import { missingScheduler, requestScopedConsumer, unknownEvent } from './queue.messages';
import { QueueMetadataAccessor } from './queue-metadata.accessor';
import { QueueRegistry } from './queue.registry';
import { QueueSettings } from './queue.settings';
import { RedisConnection } from './redis/redis-connection';
import {
  BatchConsumerOptionsRules,
  batchConsumerChecks,
  DelayConsumerOptionsRules,
  resolveOptions,
} from './validation/queue-options';
import type { BatchConsumerMetadata, DelayConsumerMetadata, QueueEventHandlerMetadata } from './decorators';
import type { QueueEventName } from './interfaces';

interface Found<M> {
  instance: Record<string, any>;
  method: string;
  label: string;
  metadata: M;
}

interface Stoppable {
  label: string;
  stop(timeoutMs: number): Promise<boolean>;
  readonly inFlight: number;
}

/**
 * Finds `@BatchConsumer` / `@DelayConsumer` methods on every provider and controller at start-up,
 * starts their workers once the application is bootstrapped, and stops them first on shutdown.
 * `@OnQueueEvent` methods are subscribed to QueueEvents as they are found.
 */
@Injectable()
export class QueueExplorer implements OnModuleInit, OnApplicationBootstrap, BeforeApplicationShutdown {
  private readonly logger = new Logger('QueueModule');
  private batchConsumers: Found<BatchConsumerMetadata>[] = [];
  private delayConsumers: Found<DelayConsumerMetadata>[] = [];
  private readonly workers: Stoppable[] = [];
  private readonly scheduled: (() => void)[] = [];
  private phase: 'idle' | 'running' | 'stopped' = 'idle';

  constructor(
    private readonly discovery: DiscoveryService,
    private readonly scanner: MetadataScanner,
    private readonly accessor: QueueMetadataAccessor,
    private readonly registry: QueueRegistry,
    private readonly connection: RedisConnection,
    private readonly settings: QueueSettings,
    private readonly moduleRef: ModuleRef,
    private readonly events: QueueEvents,
  ) {}

  onModuleInit(): void {
    const wrappers = [...this.discovery.getProviders(), ...this.discovery.getControllers()];
    for (const wrapper of wrappers) {
      const { instance } = wrapper;
      if (!instance || wrapper.isAlias || typeof instance !== 'object') continue;
      const prototype = Object.getPrototypeOf(instance);
      if (!prototype) continue;
      for (const method of this.scanner.getAllMethodNames(prototype)) {
        const batch = this.accessor.getBatchConsumer(prototype[method]);
        const delay = this.accessor.getDelayConsumer(prototype[method]);
        const listeners = this.accessor.getQueueEventHandlers(prototype[method]);
        if (!batch && !delay && !listeners) continue;
        const label = `${instance.constructor?.name ?? 'provider'}.${method}`;
        if (!wrapper.isDependencyTreeStatic()) {
          this.logger.warn(
            requestScopedConsumer(batch ? '@BatchConsumer' : delay ? '@DelayConsumer' : '@OnQueueEvent', label),
          );
          continue;
        }
        if (batch) this.batchConsumers.push({ instance, method, label, metadata: batch });
        if (delay) this.delayConsumers.push({ instance, method, label, metadata: delay });
        for (const listener of listeners ?? []) this.listen(instance, method, label, listener);
      }
    }
  }

  async onApplicationBootstrap(): Promise<void> {
    // Resolve everything first: a misconfigured consumer fails start-up before any worker claims work.
    const batchWorkers = this.batchConsumers.map((found) => this.createBatchWorker(found));
    const delayWorkers = this.delayConsumers.map((found) => this.createDelayWorker(found));
    if (!this.settings.consumers) return;
    this.phase = 'running';
    for (const worker of delayWorkers) {
      this.workers.push(worker);
      await worker.start();
    }
    for (const { worker, options, found } of batchWorkers) {
      this.workers.push(worker);
      if (options.cron !== undefined || options.intervalMs !== undefined) {
        this.schedule(worker, options, found);
      } else {
        await worker.start();
      }
    }
  }

  async beforeApplicationShutdown(): Promise<void> {
    if (this.phase === 'running') this.phase = 'stopped';
    for (const cancel of this.scheduled.splice(0)) cancel();
    const timeout = this.settings.shutdownTimeoutMs;
    const results = await Promise.all(
      this.workers.map(async (worker) => [worker, await worker.stop(timeout)] as const),
    );
    for (const [worker, finished] of results) {
      if (!finished)
        this.logger.warn(
          `${worker.label}: ${worker.inFlight} handler(s) still running after ${timeout} ms (shutdownTimeoutMs)`,
        );
    }
    this.workers.length = 0;
  }

  /**
   * @internal The consumers of this process, for health checks: `running` from bootstrap until shutdown
   * begins (a consumer's poll loop never ends by itself: it retries Redis errors with backoff).
   */
  consumers(): { queue: string; consumer: string; running: boolean }[] {
    const found = [...this.batchConsumers, ...this.delayConsumers];
    return found.map(({ metadata, label }) => ({
      queue: metadata.queue,
      consumer: label,
      running: this.phase === 'running',
    }));
  }

  private listen(
    instance: Record<string, any>,
    method: string,
    label: string,
    { event, queue }: QueueEventHandlerMetadata,
  ): void {
    if (!QUEUE_EVENT_NAMES.includes(event))
      throw new QueueConfigError(`@OnQueueEvent on ${label}: ${unknownEvent(String(event), QUEUE_EVENT_NAMES)}`);
    // A listener filtering on a queue that does not exist would never be called: say so at start-up.
    const kind = kindOf(event);
    if (queue !== undefined && kind) this.registry.get(kind, queue);
    this.events.on(event, instance[method].bind(instance), { queue });
  }

  private createBatchWorker(found: Found<BatchConsumerMetadata>) {
    const { instance, label, metadata } = found;
    const queue = this.registry.get<FixedQueue<unknown>>('fixed', metadata.queue);
    const options = resolveOptions(
      BatchConsumerOptionsRules,
      metadata.options,
      `@BatchConsumer on ${label}`,
      batchConsumerChecks,
    );
    let onFailed: BatchFailureHandler | undefined;
    if (typeof options.onFailed === 'string') {
      const hook = instance[options.onFailed];
      if (typeof hook !== 'function') {
        throw new QueueConfigError(
          `@BatchConsumer on ${label}: onFailed names "${options.onFailed}", which is not a method of ${instance.constructor?.name}`,
        );
      }
      onFailed = hook.bind(instance);
    } else if (typeof options.onFailed === 'function') {
      onFailed = (options.onFailed as BatchFailureHandler).bind(instance);
    }
    const worker = new BatchConsumerWorker(
      queue,
      instance[found.method].bind(instance),
      onFailed,
      options,
      this.connection,
      this.settings.idlePollMs,
      new Logger(queueLogContext(metadata.queue)),
      label,
    );
    return { worker, options, found };
  }

  private createDelayWorker(found: Found<DelayConsumerMetadata>): DelayConsumerWorker {
    const { instance, label, metadata } = found;
    const queue = this.registry.get<DelayQueue<unknown>>('delay', metadata.queue);
    const options = resolveOptions(DelayConsumerOptionsRules, metadata.options, `@DelayConsumer on ${label}`);
    return new DelayConsumerWorker(
      queue,
      instance[found.method].bind(instance),
      options.concurrency,
      this.connection,
      this.settings.idlePollMs,
      new Logger(queueLogContext(metadata.queue)),
      label,
    );
  }

  /** Registers a scheduled drain in @nestjs/schedule's SchedulerRegistry, so it is visible (and stoppable) there. */
  private schedule(
    worker: BatchConsumerWorker,
    options: BatchConsumerOptionsRules,
    found: Found<BatchConsumerMetadata>,
  ): void {
    const name = options.name ?? `nrq:${found.metadata.queue}:${found.label}`;
    const { SchedulerRegistry } = this.loadSchedule(found);
    let registry: any;
    try {
      registry = this.moduleRef.get(SchedulerRegistry, { strict: false });
    } catch {
      throw new QueueConfigError(missingScheduler(found.metadata.queue, found.label));
    }
    const run = () =>
      void worker
        .drain()
        .catch((error) => this.logger.error(`${found.label} scheduled drain failed: ${describeError(error)}`));
    if (options.intervalMs !== undefined) {
      const interval = setInterval(run, options.intervalMs);
      registry.addInterval(name, interval);
      this.scheduled.push(() => {
        clearInterval(interval);
        forget(() => registry.deleteInterval(name));
      });
    } else {
      const { CronJob } = createRequire(require.resolve('@nestjs/schedule'))('cron');
      const job = new CronJob(options.cron, run);
      registry.addCronJob(name, job);
      job.start();
      this.scheduled.push(() => {
        job.stop();
        forget(() => registry.deleteCronJob(name));
      });
    }
  }

  private loadSchedule(found: Found<BatchConsumerMetadata>): { SchedulerRegistry: new (...args: any[]) => unknown } {
    try {
      return require('@nestjs/schedule');
    } catch {
      throw new QueueConfigError(missingScheduler(found.metadata.queue, found.label));
    }
  }
}

/** Events of one kind of queue; `consumer.error` comes from both. */
function kindOf(event: QueueEventName): 'fixed' | 'delay' | undefined {
  if (event.startsWith('task')) return 'delay';
  return event === 'consumer.error' ? undefined : 'fixed';
}

/**
 * @nestjs/schedule clears its registry on shutdown too, before or after us depending on module order:
 * an entry already gone is fine (its timer was stopped above either way).
 */
function forget(remove: () => void): void {
  try {
    remove();
  } catch {
    // already removed by SchedulerRegistry's own shutdown
  }
}
