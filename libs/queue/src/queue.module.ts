import { DynamicModule, type FactoryProvider, Module, type ModuleMetadata, Provider } from '@nestjs/common';
import { DiscoveryModule } from '@nestjs/core';
import { FixedQueue } from './fixed-queue/fixed-queue';
import { DelayQueue } from './delay-queue/delay-queue';
import { QueueEvents } from './events/queue-events';
import { QueueHealthIndicator } from './health/queue-health.indicator';
import { getDelayQueueToken, getFixedQueueToken } from './queue.constants';
import { ConsumerFactory } from './consumer/consumer.factory';
import { ConsumerRegistry } from './consumer/consumer.registry';
import { QueueConsumers } from './queue-consumers';
import { QueueExplorer } from './queue.explorer';
import { QueueOrchestrator } from './queue.orchestrator';
import { RecurringSchedules } from './recurring/recurring-schedules';
import { DeclaredState } from './declared-state';
import { QueueMetadataAccessor } from './queue-metadata.accessor';
import { ConfigurableModuleClass, MODULE_OPTIONS_TOKEN } from './queue.module-definition';
import { QueueRegistry } from './queue.registry';
import { QueueSettings } from './queue.settings';
import { RedisConnection } from './redis/redis-connection';
import { QueueConfigError } from './errors';
import { asyncQueueName, factoryRenamed, missingRoot } from './queue.messages';
import type {
  DelayQueueAsyncOptions,
  DelayQueueOptions,
  FixedQueueAsyncOptions,
  FixedQueueOptions,
  QueueAsyncOptions,
  QueueModuleOptions,
} from './interfaces';

/**
 * `QueueModule.forRoot(...)` / `forRootAsync(...)` once (global) for the connection, then
 * `registerFixedQueue(...)` / `registerDelayQueue(...)` in any module for each queue.
 */
@Module({
  imports: [DiscoveryModule],
  providers: [
    {
      provide: QueueSettings,
      useFactory: (options: QueueModuleOptions) => QueueSettings.resolve(options),
      inject: [MODULE_OPTIONS_TOKEN],
    },
    RedisConnection,
    QueueRegistry,
    QueueMetadataAccessor,
    QueueExplorer,
    QueueOrchestrator,
    RecurringSchedules,
    DeclaredState,
    ConsumerFactory,
    ConsumerRegistry,
    QueueConsumers,
    QueueEvents,
    QueueHealthIndicator,
  ],
  exports: [
    QueueSettings,
    RedisConnection,
    QueueRegistry,
    QueueEvents,
    QueueHealthIndicator,
    QueueConsumers,
    ConsumerRegistry,
    RecurringSchedules,
  ],
})
export class QueueModule extends ConfigurableModuleClass {
  /** Registers a FixedQueue, injectable with `@InjectFixedQueue(name)`. */
  static registerFixedQueue(options: FixedQueueOptions): DynamicModule {
    return queueModule(getFixedQueueToken(options?.name), given(options), createFixedQueue, [], 'registerFixedQueue');
  }

  /**
   * Registers a FixedQueue whose options come from `useFactory` (given what `inject` lists, from `imports`):
   * `registerFixedQueueAsync({ name, imports: [ConfigModule], inject: [ConfigService], useFactory: (config) => ({ ... }) })`.
   */
  static registerFixedQueueAsync(options: FixedQueueAsyncOptions): DynamicModule {
    const name = asyncName(options, 'QueueModule.registerFixedQueueAsync');
    return queueModule(
      getFixedQueueToken(name),
      factoryOf(name, options),
      createFixedQueue,
      options.imports,
      'registerFixedQueueAsync',
    );
  }

  /** Registers a DelayQueue, injectable with `@InjectDelayQueue(name)`. */
  static registerDelayQueue(options: DelayQueueOptions): DynamicModule {
    return queueModule(getDelayQueueToken(options?.name), given(options), createDelayQueue, [], 'registerDelayQueue');
  }

  /** Registers a DelayQueue whose options come from `useFactory`, as `registerFixedQueueAsync` does. */
  static registerDelayQueueAsync(options: DelayQueueAsyncOptions): DynamicModule {
    const name = asyncName(options, 'QueueModule.registerDelayQueueAsync');
    return queueModule(
      getDelayQueueToken(name),
      factoryOf(name, options),
      createDelayQueue,
      options.imports,
      'registerDelayQueueAsync',
    );
  }
}

/** Holds the queue registered by one `registerFixedQueue` / `registerDelayQueue` call. */
@Module({})
export class QueueFeatureModule {}

type CreateQueue = (
  options: never,
  connection: RedisConnection,
  settings: QueueSettings,
  registry: QueueRegistry,
  events: QueueEvents,
  consumers: ConsumerRegistry,
) => unknown;

const createFixedQueue = (
  options: FixedQueueOptions,
  connection: RedisConnection,
  settings: QueueSettings,
  registry: QueueRegistry,
  events: QueueEvents,
  consumers: ConsumerRegistry,
) =>
  registry.register(
    'fixed',
    options?.name,
    options,
    () => new FixedQueue(options, connection, settings, events, consumers),
  );

const createDelayQueue = (
  options: DelayQueueOptions,
  connection: RedisConnection,
  settings: QueueSettings,
  registry: QueueRegistry,
  events: QueueEvents,
  consumers: ConsumerRegistry,
) =>
  registry.register(
    'delay',
    options?.name,
    options,
    () => new DelayQueue(options, connection, settings, events, consumers),
  );

/** The queue's options as a provider of the feature module: given, or made by the caller's factory. */
type OptionsSource = Pick<FactoryProvider, 'useFactory' | 'inject'>;

// A factory, not useValue: Nest would take `useValue: undefined` for another kind of provider.
const given = (options: unknown): OptionsSource => ({ useFactory: () => options });

function queueModule(
  token: string,
  source: OptionsSource,
  create: CreateQueue,
  imports: ModuleMetadata['imports'],
  method: string,
): DynamicModule {
  // Private to this feature module: modules registering the same queue each have their own.
  const optionsToken = `${token}:options`;
  const root = [RedisConnection, QueueSettings, QueueRegistry, QueueEvents, ConsumerRegistry];
  const providers: Provider[] = [
    { provide: optionsToken, ...source },
    {
      provide: token,
      // Optional, so that a missing forRoot is said in these words rather than as Nest's unresolved index.
      useFactory: (options: unknown, ...shared: unknown[]) => {
        if (shared.some((provider) => provider === undefined))
          throw new QueueConfigError(missingRoot(`QueueModule.${method}`, (options as { name?: unknown })?.name));
        return (create as (...args: unknown[]) => unknown)(options, ...shared);
      },
      inject: [optionsToken, ...root.map((provided) => ({ token: provided, optional: true }))],
    },
  ];
  return { module: QueueFeatureModule, imports: imports ?? [], providers, exports: [token] };
}

/** The name, checked at once: the injection token is made from it before any factory runs. */
function asyncName(options: QueueAsyncOptions<{ name: string }>, method: string): string {
  if (typeof options?.name !== 'string' || options.name === '') throw new QueueConfigError(asyncQueueName(method));
  return options.name;
}

function factoryOf(name: string, options: QueueAsyncOptions<{ name: string }>): OptionsSource {
  return {
    inject: options.inject ?? [],
    useFactory: async (...args: unknown[]) => {
      const made: unknown = await options.useFactory(...args);
      // Anything but an object goes on to validation, which says what it got.
      if (made === null || typeof made !== 'object' || Array.isArray(made)) return made;
      const given = (made as { name?: unknown }).name;
      if (given !== undefined && given !== name) throw new QueueConfigError(factoryRenamed(name, given));
      return { ...made, name };
    },
  };
}
