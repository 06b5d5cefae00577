import type { InjectionToken, ModuleMetadata, OptionalFactoryDependency } from '@nestjs/common';
import type { DelayQueueOptions } from './delay-queue-options.interface';
import type { FixedQueueOptions } from './fixed-queue-options.interface';

/**
 * One queue whose options come from a factory (of `ConfigService`, say), as `forRootAsync` takes the
 * module's. What the factory returns is validated like `registerFixedQueue`'s / `registerDelayQueue`'s options.
 */
export interface QueueAsyncOptions<O extends { name: string }> extends Pick<ModuleMetadata, 'imports'> {
  /** The queue's name, known before the factory runs: `@InjectFixedQueue(name)` / `getFixedQueueToken(name)` need it. */
  name: string;
  /** Providers passed to `useFactory`, in order. */
  inject?: (InjectionToken | OptionalFactoryDependency)[];
  /** The queue's options; `name` may be left out (it is the one above), or must equal it. */
  // eslint-disable-next-line @typescript-eslint/no-explicit-any -- a factory takes whatever `inject` lists, as Nest's own do
  useFactory: (...args: any[]) => QueueFactoryResult<O> | Promise<QueueFactoryResult<O>>;
}

export type QueueFactoryResult<O extends { name: string }> = Omit<O, 'name'> & { name?: string };

/** `QueueModule.registerFixedQueueAsync`. */
export type FixedQueueAsyncOptions = QueueAsyncOptions<FixedQueueOptions>;

/** `QueueModule.registerDelayQueueAsync`. */
export type DelayQueueAsyncOptions = QueueAsyncOptions<DelayQueueOptions>;
