import { Injectable, type INestApplication, type LoggerService, type ModuleMetadata, type Type } from '@nestjs/common';
import {
  BatchConsumer,
  type BatchConsumerDecoratorOptions,
  type BatchContext,
  DelayConsumer,
  type DelayConsumerDecoratorOptions,
  type DelayContext,
  type DelayQueue,
  type DelayQueueOptions,
  type FixedQueue,
  type FixedQueueOptions,
  getDelayQueueToken,
  getFixedQueueToken,
  type QueueConnection,
  QueueModule,
  type QueueModuleOptions,
} from 'nestjs-redis-queues';
import { connection, createApp, keysMatching, type RawRedis, topologyClient, uniquePrefix } from './testing';

/** An application with QueueModule and some queues, on a prefix of its own. */
export interface QueueAppOptions {
  /** The suite's test Redis (a server or the cluster, by topology) unless given. */
  connection?: QueueConnection;
  /** A fresh `uniquePrefix()` unless given. */
  prefix?: string;
  /** The other options of `QueueModule.forRoot`. */
  root?: Omit<QueueModuleOptions, 'connection' | 'prefix'>;
  /** Registered in this order, before the delay queues. */
  fixed?: Partial<FixedQueueOptions>[];
  delay?: Partial<DelayQueueOptions>[];
  /** Modules imported after the queues (metrics, dashboard, …). */
  imports?: ModuleMetadata['imports'];
  providers?: ModuleMetadata['providers'];
  controllers?: ModuleMetadata['controllers'];
  /** Every log line goes there (to check what an operator reads); errors only to the console otherwise. */
  logger?: LoggerService;
}

export interface HarnessOptions<C extends RawRedis> {
  client?: () => C;
  scope?: 'test' | 'suite';
}

export interface QueueApp {
  app: INestApplication;
  prefix: string;
  fixed<T = unknown>(name: string): FixedQueue<T>;
  delay<T = unknown>(name: string): DelayQueue<T>;
}

function queueModuleMetadata(options: QueueAppOptions, prefix: string): ModuleMetadata {
  return {
    imports: [
      QueueModule.forRoot({ connection: options.connection ?? connection(), prefix, ...options.root }),
      ...(options.fixed ?? []).map((queue) => QueueModule.registerFixedQueue(queue as FixedQueueOptions)),
      ...(options.delay ?? []).map((queue) => QueueModule.registerDelayQueue(queue as DelayQueueOptions)),
      ...(options.imports ?? []),
    ],
    providers: options.providers,
    controllers: options.controllers,
  };
}

/** Starts an application (no HTTP listener); closing it is the caller's job, or `useQueueApps`'. */
export async function startQueueApp(options: QueueAppOptions): Promise<QueueApp> {
  const prefix = options.prefix ?? uniquePrefix();
  const app = await createApp(queueModuleMetadata(options, prefix), options.logger);
  return {
    app,
    prefix,
    fixed: <T>(name: string) => app.get<FixedQueue<T>>(getFixedQueueToken(name)),
    delay: <T>(name: string) => app.get<DelayQueue<T>>(getDelayQueueToken(name)),
  };
}

/**
 * The harness of a suite that starts applications. After each test (or once after the suite, with
 * `scope: 'suite'`) it closes the applications it started, so nothing a closing app still delivers leaks
 * into the next test; deletes the keys of every prefix they used on the test Redis; and clears every
 * recorder. `redis` looks at the test Redis (`client` makes it: a client of the suite's topology by default).
 */
export function useQueueApps<C extends RawRedis = RawRedis>({
  client = topologyClient as () => C,
  scope = 'test',
}: HarnessOptions<C> = {}) {
  const apps = new Set<INestApplication>();
  const prefixes = new Set<string>();
  let redis: C | undefined;
  const harness = {
    /** A client of the test Redis, made on first use and kept for the whole suite. */
    get redis(): C {
      return (redis ??= client());
    },
    async start(options: QueueAppOptions = {}): Promise<QueueApp> {
      const prefix = options.prefix ?? uniquePrefix();
      // Before the start: an app that fails to start may have written its queues' records.
      if (!options.connection) prefixes.add(prefix);
      const started = await startQueueApp({ ...options, prefix });
      apps.add(started.app);
      return started;
    },
    /** A fresh prefix whose keys are deleted after the test, for writes made without an application. */
    prefix(label?: string): string {
      const prefix = uniquePrefix(label);
      prefixes.add(prefix);
      return prefix;
    },
    /** An application built otherwise, closed after the test like the others. */
    track<A extends INestApplication>(app: A, prefix?: string): A {
      apps.add(app);
      if (prefix) prefixes.add(prefix);
      return app;
    },
    /** Closes one application now (a shutdown under test); the others close after the test. */
    async close(app: INestApplication): Promise<void> {
      apps.delete(app);
      await app.close();
    },
  };
  (scope === 'test' ? afterEach : afterAll)(async () => {
    const closing = [...apps];
    apps.clear();
    await Promise.all(closing.map((app) => app.close()));
    const used = [...prefixes];
    prefixes.clear();
    // A cluster client knows its masters only once connected.
    if (used.length > 0) await harness.redis.ping();
    for (const prefix of used) {
      const keys = await keysMatching(harness.redis, `${prefix}:*`);
      // One DEL per key: on a cluster the keys of a prefix live in many slots.
      await Promise.all(keys.map((key) => harness.redis.del(key)));
    }
    for (const recorder of recorders) recorder.reset();
  });
  afterAll(async () => {
    await redis?.quit();
  });
  return harness;
}

/** What a recorder has seen, with a way to wait for more without sleeping. */
class Recording<T> {
  readonly seen: T[] = [];
  private waiters: { done: () => boolean; resolve: () => void }[] = [];

  add(item: T): void {
    this.seen.push(item);
    this.waiters = this.waiters.filter((waiter) => {
      if (!waiter.done()) return true;
      waiter.resolve();
      return false;
    });
  }

  reset(): void {
    this.seen.length = 0;
  }

  /** Resolves once `done` holds, checked now and after each record; fails with `what` after `timeoutMs`. */
  until(done: () => boolean, what: string, timeoutMs: number): Promise<void> {
    if (done()) return Promise.resolve();
    return new Promise<void>((resolve, reject) => {
      const timer = setTimeout(() => {
        this.waiters = this.waiters.filter((waiter) => waiter.resolve !== settle);
        reject(new Error(`Timed out after ${timeoutMs} ms waiting for ${what} (${this.seen.length} recorded)`));
      }, timeoutMs);
      const settle = () => {
        clearTimeout(timer);
        resolve();
      };
      this.waiters.push({ done, resolve: settle });
    });
  }
}

/** What both kinds of recorder have: the consumer to provide, and what it does once it has recorded. */
interface Recorder<A extends unknown[]> {
  /** The provider to put into an application: one decorated consumer method. */
  readonly consumer: Type;
  /** What the handler returns (or throws) after recording. */
  behaviour: (...args: A) => unknown;
  /** Forgets what was recorded and restores the behaviour given at creation (after each test). */
  reset(): void;
}

const recorders = new Set<Recorder<never>>();

/**
 * A provider whose one method, decorated with `consumer`, records `record(...args)` then runs
 * `behaviour`; `reset` (after each test) forgets what was recorded and restores `behaviour`.
 */
function recorder<I, A extends unknown[]>(
  consumer: MethodDecorator,
  record: (...args: A) => I,
  behaviour: (...args: A) => unknown,
) {
  const recording = new Recording<I>();

  @Injectable()
  class RecordingConsumer {
    @consumer
    async handle(...args: A) {
      recording.add(record(...args));
      return state.behaviour(...args);
    }
  }

  const state = {
    consumer: RecordingConsumer as Type,
    recording,
    behaviour,
    reset: () => {
      recording.reset();
      state.behaviour = behaviour;
    },
  };
  recorders.add(state);
  return state;
}

export interface RecordedBatch<T> {
  group: string;
  messages: T[];
  ctx: BatchContext;
}

export interface BatchRecorder<T> extends Recorder<[T[], BatchContext]> {
  /** Every batch handed to any instance of `consumer`, in the order handled. */
  readonly batches: RecordedBatch<T>[];
  /** The messages of every batch, in the order handled. */
  messages(): T[];
  /** Resolves once `count` messages were recorded in all. */
  untilMessages(count: number, timeoutMs?: number): Promise<void>;
}

/** A `@BatchConsumer(queue, options)` that records every batch it is handed, then runs `behaviour`. */
export function recordBatches<T = unknown>(
  queue: string,
  options: BatchConsumerDecoratorOptions = {},
  behaviour: BatchRecorder<T>['behaviour'] = () => undefined,
): BatchRecorder<T> {
  const base = recorder(
    BatchConsumer(queue, options),
    (messages: T[], ctx: BatchContext): RecordedBatch<T> => ({ group: ctx.group, messages, ctx }),
    behaviour,
  );
  const messages = () => base.recording.seen.flatMap((batch) => batch.messages);
  return Object.assign(base, {
    batches: base.recording.seen,
    messages,
    untilMessages: (count: number, timeoutMs = 10_000) =>
      base.recording.until(() => messages().length >= count, `${count} messages of "${queue}"`, timeoutMs),
  });
}

export interface RecordedTask<T> {
  id: string;
  payload: T;
  ctx: DelayContext;
  /** Client time of the delivery. */
  at: number;
}

export interface TaskRecorder<T> extends Recorder<[T, DelayContext]> {
  /** Every delivery to any instance of `consumer`, in the order delivered. */
  readonly tasks: RecordedTask<T>[];
  /** The ids delivered, in order (one per attempt). */
  ids(): string[];
  /** Resolves once `count` deliveries were recorded. */
  untilTasks(count: number, timeoutMs?: number): Promise<void>;
}

/** A `@DelayConsumer(queue, options)` that records every delivery it is handed, then runs `behaviour`. */
export function recordTasks<T = unknown>(
  queue: string,
  options: DelayConsumerDecoratorOptions = {},
  behaviour: TaskRecorder<T>['behaviour'] = () => undefined,
): TaskRecorder<T> {
  const base = recorder(
    DelayConsumer(queue, options),
    (payload: T, ctx: DelayContext): RecordedTask<T> => ({ id: ctx.id, payload, ctx, at: Date.now() }),
    behaviour,
  );
  const tasks = base.recording.seen;
  return Object.assign(base, {
    tasks,
    ids: () => tasks.map((task) => task.id),
    untilTasks: (count: number, timeoutMs = 10_000) =>
      base.recording.until(() => tasks.length >= count, `${count} tasks of "${queue}"`, timeoutMs),
  });
}
