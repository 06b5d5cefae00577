import {
  BeforeApplicationShutdown,
  Injectable,
  type InjectionToken,
  Logger,
  OnApplicationBootstrap,
  OnModuleInit,
} from '@nestjs/common';
import { ModuleRef } from '@nestjs/core';
import { ConsumerStatusRegistry } from './consumer-status.registry';
import { QueueConsumers } from './queue-consumers';
import { QueueConfigError } from './errors';
import { FixedQueue } from './fixed-queue/fixed-queue';
import { BatchConsumerWorker, type BatchFailureHandler } from './fixed-queue/batch-consumer.worker';
import { DelayConsumerWorker } from './delay-queue/delay-consumer.worker';
import { DelayQueue } from './delay-queue/delay-queue';
import { eventQueueKind, QUEUE_EVENT_NAMES, QueueEvents } from './events/queue-events';
import { getDelayQueueToken, getFixedQueueToken } from './queue.constants';
import { badCron, missingScheduler, replacedQueue, unknownEvent } from './queue.messages';
import { QueueExplorer, type FoundMethod } from './queue.explorer';
import { QueueRegistry } from './queue.registry';
import { QueueSettings } from './queue.settings';
import { RedisConnection } from './redis/redis-connection';
import { loadOptional } from './optional-dependency';
import { describeError } from './utils/errors';
import { raceTimeout, TIMED_OUT } from './utils/timers';
import { queueLogContext } from './utils/log-line';
import type { WorkerDependencies } from './consumer/sharded-worker';
import type { RunningConsumers } from './consumer/running-consumers';
import {
  BatchConsumerOptionsRules,
  batchConsumerChecks,
  DelayConsumerOptionsRules,
  resolveOptions,
} from './validation/queue-options';
import type { BatchConsumerMetadata, DelayConsumerMetadata, QueueEventHandlerMetadata } from './decorators';
import type { ConsumerOptionsFactory, QueueKind } from './interfaces';

type Method = (...args: unknown[]) => unknown;

interface Stoppable {
  label: string;
  stop(timeoutMs: number): Promise<boolean>;
  readonly inFlight: number;
}

/** The part of @nestjs/schedule's SchedulerRegistry this uses. */
interface Scheduler {
  addInterval(name: string, interval: NodeJS.Timeout): void;
  deleteInterval(name: string): void;
  addCronJob(name: string, job: CronJob): void;
  deleteCronJob(name: string): void;
}

interface CronJob {
  start(): void;
  stop(): void;
  nextDates(count: number): { toMillis(): number }[];
}

/** Runs of a cron looked ahead to find its longest gap (a weekday cron's weekend, a month's end). */
const CRON_LOOKAHEAD = 8;

type ScheduleModule = { SchedulerRegistry: abstract new (...args: never[]) => Scheduler };
type CronModule = { CronJob: new (cronTime: string, onTick: () => void) => CronJob };

/**
 * Mounts what QueueExplorer found, in Nest's lifecycle phases: event handlers are subscribed at module
 * init, consumers start once the application is bootstrapped and stop claiming first on shutdown
 * (waiting up to `shutdownTimeoutMs` for running handlers), before connections close.
 */
@Injectable()
export class QueueOrchestrator implements OnModuleInit, OnApplicationBootstrap, BeforeApplicationShutdown {
  private readonly logger = new Logger('QueueModule');
  private batchConsumers: FoundMethod<BatchConsumerMetadata>[] = [];
  private delayConsumers: FoundMethod<DelayConsumerMetadata>[] = [];
  /** Each started worker, and its entry in its queue's running consumers (`obliterate` asks them). */
  private readonly running = new Map<Stoppable, RunningConsumers>();
  private readonly scheduled: (() => void)[] = [];
  /** What discovery refused, thrown once every module is initialised. */
  private refused: unknown;

  constructor(
    private readonly explorer: QueueExplorer,
    private readonly registry: QueueRegistry,
    private readonly connection: RedisConnection,
    private readonly settings: QueueSettings,
    private readonly moduleRef: ModuleRef,
    private readonly events: QueueEvents,
    private readonly status: ConsumerStatusRegistry,
    private readonly consumers: QueueConsumers,
  ) {}

  onModuleInit(): void {
    try {
      const found = this.explorer.explore();
      this.batchConsumers = found.batchConsumers;
      this.delayConsumers = found.delayConsumers;
      for (const { metadata, label } of [...found.batchConsumers, ...found.delayConsumers])
        this.status.add(metadata.queue, label);
      for (const handler of found.eventHandlers) this.listen(handler);
    } catch (error) {
      // Thrown at bootstrap: the connection's own start-up (PING) runs beside this hook, and closing it
      // now would be reported as Redis being unreachable.
      this.refused = error;
    }
  }

  async onApplicationBootstrap(): Promise<void> {
    try {
      if (this.refused !== undefined) throw this.refused;
      await this.startConsumers();
    } catch (error) {
      await this.abandonStartup();
      throw error;
    }
  }

  /**
   * A failed start-up is often not followed by `app.close()` (a test whose `init()` rejected, a
   * bootstrap that exits): what start-up opened is closed here, or it would keep the process alive.
   */
  private async abandonStartup(): Promise<void> {
    await this.beforeApplicationShutdown();
    this.connection.beforeApplicationShutdown();
    await this.connection.onApplicationShutdown();
  }

  private async startConsumers(): Promise<void> {
    // Resolve everything first: a misconfigured consumer fails start-up before any worker claims work.
    const batchWorkers: { worker: BatchConsumerWorker; queue: FixedQueue; schedule?: () => void }[] = [];
    for (const found of this.batchConsumers) {
      const prepared = await this.createBatchWorker(found);
      if (prepared) batchWorkers.push(prepared);
    }
    const delayWorkers: { worker: DelayConsumerWorker; queue: DelayQueue }[] = [];
    for (const found of this.delayConsumers) {
      const prepared = await this.createDelayWorker(found);
      if (prepared) delayWorkers.push(prepared);
    }
    if (!this.settings.consumers) return;
    this.status.setRunning(true);
    for (const { worker, queue } of delayWorkers) {
      this.mount(worker, queue.consumers);
      await worker.start();
    }
    for (const { worker, queue, schedule } of batchWorkers) {
      this.mount(worker, queue.consumers);
      if (schedule) schedule();
      else await worker.start();
    }
  }

  private mount(worker: DelayConsumerWorker | BatchConsumerWorker, consumers: RunningConsumers): void {
    consumers.add(worker);
    this.running.set(worker, consumers);
    this.consumers.attach(worker.queue, worker);
  }

  async beforeApplicationShutdown(): Promise<void> {
    this.status.setRunning(false);
    for (const cancel of this.scheduled.splice(0)) cancel();
    const timeout = this.settings.shutdownTimeoutMs;
    // One budget for the whole shutdown (RedisConnection closes by the same deadline): handlers get
    // `shutdownTimeoutMs`, handing back their unfinished work at most `commandTimeoutMs` more, whatever
    // state Redis is in. A hand-back cut short is dropped with the connection; its lease returns it.
    const budgetMs = timeout + this.settings.commandTimeoutMs;
    const workers = [...this.running.keys()];
    const results = await raceTimeout(
      Promise.all(workers.map(async (worker) => [worker, await worker.stop(timeout)] as const)),
      budgetMs,
    );
    const stopped = results === TIMED_OUT ? workers.map((worker) => [worker, false] as const) : results;
    for (const [worker, finished] of stopped) {
      if (!finished)
        this.logger.warn(
          `${worker.label}: ${worker.inFlight} handler(s) still running after ${timeout} ms (shutdownTimeoutMs)`,
        );
    }
    for (const [worker, consumers] of this.running) consumers.delete(worker);
    this.running.clear();
  }

  private listen({ instance, method, label, metadata: { event, queue } }: FoundMethod<QueueEventHandlerMetadata>) {
    if (!QUEUE_EVENT_NAMES.includes(event))
      throw new QueueConfigError(`@OnQueueEvent on ${label}: ${unknownEvent(String(event), QUEUE_EVENT_NAMES)}`);
    // A listener filtering on a queue that does not exist would never be called: say so at start-up.
    const kind = eventQueueKind(event);
    if (queue !== undefined && kind) this.queueOf(kind, queue);
    this.events.on(event, bound(instance, method), { queue });
  }

  /** What every worker of a queue shares, whatever its kind. */
  private workerDependencies(
    queue: FixedQueue<unknown> | DelayQueue<unknown>,
    found: FoundMethod<unknown>,
    concurrency: number,
  ): WorkerDependencies {
    return {
      queue: queue.name,
      shards: queue.options.shards,
      wakeChannel: queue.store.keys.wakeChannel,
      clock: queue.clock,
      events: queue.events,
      subscribe: (channel, listener) => this.connection.subscribe(channel, listener),
      idlePollMs: this.settings.idlePollMs,
      concurrency,
      logger: new Logger(queueLogContext(queue.name)),
      label: found.label,
    };
  }

  /**
   * The queue a consumer or listener names: registered, or provided under its token by something else
   * (a test's `overrideProvider(getDelayQueueToken(name))`), which is found but not consumed.
   * Neither: UnknownQueueError.
   */
  private queueOf(kind: QueueKind, name: string): FixedQueue<unknown> | DelayQueue<unknown> | object {
    if (this.registry.has(kind, name)) return this.registry.get(kind, name);
    let provided: unknown;
    try {
      provided = this.moduleRef.get(kind === 'fixed' ? getFixedQueueToken(name) : getDelayQueueToken(name), {
        strict: false,
      });
    } catch {
      return this.registry.get(kind, name);
    }
    return (provided ?? {}) as object;
  }

  /** A consumer's queue, or undefined (logged) when a provider override replaced it with something else. */
  private consumedQueue<Q>(kind: QueueKind, name: string, label: string, type: abstract new (...args: never[]) => Q) {
    const queue = this.queueOf(kind, name);
    if (queue instanceof type) return queue;
    this.logger.log(replacedQueue(kind, name, label));
    return undefined;
  }

  /** Decorator options, with what their `useFactory` makes of the providers `inject` lists laid over them. */
  private async consumerOptions(raw: unknown, label: string): Promise<unknown> {
    if (raw === null || typeof raw !== 'object' || !('useFactory' in raw)) return raw;
    const { inject = [], useFactory, ...written } = raw as ConsumerOptionsFactory<object>;
    if (typeof useFactory !== 'function') throw new QueueConfigError(`${label}: useFactory must be a function`);
    if (!Array.isArray(inject)) throw new QueueConfigError(`${label}: inject must be an array of providers`);
    const dependencies = inject.map((token: InjectionToken) => {
      try {
        return this.moduleRef.get(token, { strict: false });
      } catch (error) {
        throw new QueueConfigError(
          `${label}: inject lists ${typeof token === 'function' ? token.name : String(token)}, which no module of the application provides`,
          { cause: error },
        );
      }
    });
    let made: unknown;
    try {
      made = await useFactory(...dependencies);
    } catch (error) {
      throw new QueueConfigError(`${label}: the options' useFactory threw: ${describeError(error)}`, { cause: error });
    }
    // Anything but an object goes on to validation, which says what it got.
    return made !== null && typeof made === 'object' ? { ...written, ...made } : made;
  }

  private async createBatchWorker(found: FoundMethod<BatchConsumerMetadata>) {
    const { instance, label, metadata } = found;
    const where = `@BatchConsumer on ${label}`;
    const queue = this.consumedQueue('fixed', metadata.queue, label, FixedQueue<unknown>);
    const options = resolveOptions(
      BatchConsumerOptionsRules,
      await this.consumerOptions(metadata.options, where),
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
    const worker = new BatchConsumerWorker({
      ...this.workerDependencies(queue, found, options.concurrency),
      store: queue.store,
      acks: queue.acks,
      delivery: queue.options,
      handler: bound(instance, found.method),
      onFailed,
      options,
    });
    // A producer-only process need not have @nestjs/schedule: checked only where consumers run.
    const scheduled = this.settings.consumers && (options.cron !== undefined || options.intervalMs !== undefined);
    return { worker, queue, schedule: scheduled ? this.prepareSchedule(worker, options, found) : undefined };
  }

  private async createDelayWorker(found: FoundMethod<DelayConsumerMetadata>) {
    const { instance, label, metadata } = found;
    const where = `@DelayConsumer on ${label}`;
    const queue = this.consumedQueue('delay', metadata.queue, label, DelayQueue<unknown>);
    const options = resolveOptions(
      DelayConsumerOptionsRules,
      await this.consumerOptions(metadata.options, where),
      where,
    );
    if (!queue) return undefined;
    const worker = new DelayConsumerWorker({
      ...this.workerDependencies(queue, found, options.concurrency),
      store: queue.store,
      acks: queue.acks,
      handler: bound(instance, found.method),
      options: queue.options,
    });
    return { worker, queue };
  }

  /**
   * Checks a scheduled drain's setup (SchedulerRegistry present, cron valid) and returns what starts it:
   * registered in @nestjs/schedule's SchedulerRegistry, so it is visible (and stoppable) there.
   */
  private prepareSchedule(
    worker: BatchConsumerWorker,
    options: BatchConsumerOptionsRules,
    found: FoundMethod<BatchConsumerMetadata>,
  ): () => void {
    const name = options.name ?? `nrq:${found.metadata.queue}:${found.label}`;
    const feature = `@BatchConsumer('${found.metadata.queue}') with a schedule on ${found.label}`;
    const { SchedulerRegistry } = loadOptional<ScheduleModule>('@nestjs/schedule', feature);
    let registry: Scheduler;
    try {
      registry = this.moduleRef.get(SchedulerRegistry, { strict: false });
    } catch (error) {
      throw new QueueConfigError(missingScheduler(found.metadata.queue, found.label), { cause: error });
    }
    const run = () =>
      void worker
        .drain()
        .catch((error) => this.logger.error(`${found.label} scheduled drain failed: ${describeError(error)}`));
    if (options.intervalMs !== undefined) {
      const every = options.intervalMs;
      return () => {
        this.status.setSchedule(found.metadata.queue, found.label, every);
        const interval = setInterval(run, every);
        registry.addInterval(name, interval);
        this.scheduled.push(() => {
          clearInterval(interval);
          forget(() => registry.deleteInterval(name));
        });
      };
    }
    // @nestjs/schedule does not re-export CronJob, and its registry takes jobs of its own `cron`.
    const { CronJob } = loadOptional<CronModule>('cron', feature, '@nestjs/schedule');
    const cron = options.cron as string;
    let job: CronJob;
    try {
      // Not started: a job only arms its timer in start().
      job = new CronJob(cron, run);
    } catch (error) {
      throw new QueueConfigError(badCron(found.label, cron, describeError(error)), { cause: error });
    }
    return () => {
      this.status.setSchedule(found.metadata.queue, found.label, longestGap(job));
      registry.addCronJob(name, job);
      job.start();
      this.scheduled.push(() => {
        job.stop();
        forget(() => registry.deleteCronJob(name));
      });
    };
  }
}

function longestGap(job: CronJob): number {
  const runs = job.nextDates(CRON_LOOKAHEAD).map((date) => date.toMillis());
  let gap = 0;
  for (let i = 1; i < runs.length; i++) gap = Math.max(gap, runs[i] - runs[i - 1]);
  return gap;
}

/** `instance[method]` bound to its instance; the explorer found it to be a method. */
function bound(instance: object, method: string): Method {
  return ((instance as Record<string, Method>)[method] as Method).bind(instance);
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
