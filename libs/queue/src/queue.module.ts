import { DynamicModule, type FactoryProvider, Module, type ModuleMetadata, Provider } from '@nestjs/common';
import { DiscoveryModule, ModulesContainer } from '@nestjs/core';
import { QueueEvents } from './events/queue-events';
import { QueueHealthIndicator } from './health/queue-health.indicator';
import { getDelayQueueToken, getFixedQueueToken } from './queue.constants';
import { ConsumerFactory } from './consumer.factory';
import { ConsumerRegistry } from './consumer/consumer.registry';
import { QueueConsumers } from './queue-consumers';
import { QueueClock } from './queue-clock';
import { QueueExplorer } from './queue.explorer';
import { QueueOrchestrator } from './queue.orchestrator';
import { RecurringMounter } from './recurring/recurring-mounter';
import { RecurringSchedules } from './recurring/recurring-schedules';
import { DeclaredState } from './declared-state';
import { QueueProcesses } from './queue-processes';
import { QueueMetadataAccessor } from './queue-metadata.accessor';
import { ConfigurableModuleClass, MODULE_OPTIONS_TOKEN } from './queue.module-definition';
import { QueueRegistry } from './queue.registry';
import { QueueSettings } from './queue.settings';
import { CONNECTION_OPTIONS, RedisConnection } from './redis/redis-connection';
import { asyncQueueName, factoryRenamed, missingRoot } from './queue.messages';
import type {
  DelayQueueAsyncOptions,
  DelayQueueOptions,
  FixedQueueAsyncOptions,
  FixedQueueOptions,
  QueueAsyncOptions,
  QueueKind,
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
    { provide: CONNECTION_OPTIONS, useExisting: MODULE_OPTIONS_TOKEN },
    RedisConnection,
    QueueRegistry,
    QueueMetadataAccessor,
    QueueExplorer,
    QueueOrchestrator,
    RecurringMounter,
    RecurringSchedules,
    DeclaredState,
    QueueProcesses,
    ConsumerFactory,
    ConsumerRegistry,
    QueueConsumers,
    QueueEvents,
    QueueHealthIndicator,
    QueueClock,
  ],
  exports: [
    QueueClock,
    QueueProcesses,
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
    return queueModule('fixed', options?.name, given(options), [], 'registerFixedQueue');
  }

  /**
   * Registers a FixedQueue whose options come from `useFactory` (given what `inject` lists, from `imports`):
   * `registerFixedQueueAsync({ name, imports: [ConfigModule], inject: [ConfigService], useFactory: (config) => ({ ... }) })`.
   */
  static registerFixedQueueAsync(options: FixedQueueAsyncOptions): DynamicModule {
    return asyncQueueModule('fixed', options, 'registerFixedQueueAsync');
  }

  /** Registers a DelayQueue, injectable with `@InjectDelayQueue(name)`. */
  static registerDelayQueue(options: DelayQueueOptions): DynamicModule {
    return queueModule('delay', options?.name, given(options), [], 'registerDelayQueue');
  }

  /** Registers a DelayQueue whose options come from `useFactory`, as `registerFixedQueueAsync` does. */
  static registerDelayQueueAsync(options: DelayQueueAsyncOptions): DynamicModule {
    return asyncQueueModule('delay', options, 'registerDelayQueueAsync');
  }
}

/**
 * Holds the queue registered by one `registerFixedQueue` / `registerDelayQueue` call. Global, as
 * `ConfigModule.forRoot({ isGlobal })` is: the queue's options are declared once, in one module, and
 * every module of the application can inject and consume it by name.
 */
@Module({})
export class QueueFeatureModule {}

/** Each kind's injection token, and how its registry makes it. */
const KINDS = {
  fixed: {
    token: getFixedQueueToken,
    create: (options: FixedQueueOptions, registry: QueueRegistry, registeredIn: () => string) =>
      registry.fixedQueue(options, registeredIn),
  },
  delay: {
    token: getDelayQueueToken,
    create: (options: DelayQueueOptions, registry: QueueRegistry, registeredIn: () => string) =>
      registry.delayQueue(options, registeredIn),
  },
};

/** The queue's options as a provider of the feature module: given, or made by the caller's factory. */
type OptionsSource = Pick<FactoryProvider, 'useFactory' | 'inject'>;

// A factory, not useValue: Nest would take `useValue: undefined` for another kind of provider.
const given = (options: unknown): OptionsSource => ({ useFactory: () => options });

function asyncQueueModule(kind: QueueKind, options: QueueAsyncOptions<{ name: string }>, method: string) {
  const name = asyncName(options, `QueueModule.${method}`);
  return queueModule(kind, name, factoryOf(name, options), options.imports, method);
}

function queueModule(
  kind: QueueKind,
  name: string,
  source: OptionsSource,
  imports: ModuleMetadata['imports'],
  method: string,
): DynamicModule {
  const { token: tokenOf, create } = KINDS[kind];
  const token = tokenOf(name);
  // Private to this feature module (not exported): modules registering the same queue each have their own.
  const optionsToken = `${token}:options`;
  const providers: Provider[] = [
    { provide: optionsToken, ...source },
    {
      provide: token,
      // Optional, so that a missing forRoot is said in these words rather than as Nest's unresolved index.
      useFactory: (options: unknown, modules: ModulesContainer, registry: QueueRegistry | undefined) => {
        if (registry === undefined) throw missingRoot(`QueueModule.${method}`, (options as { name?: unknown })?.name);
        const registeredIn = () => importersOf(modules, registration);
        return (create as (...args: unknown[]) => unknown)(options, registry, registeredIn);
      },
      inject: [optionsToken, ModulesContainer, { token: QueueRegistry, optional: true }],
    },
  ];
  const registration: DynamicModule = {
    module: QueueFeatureModule,
    global: true,
    imports: imports ?? [],
    providers,
    exports: [token],
  };
  return registration;
}

// Where `@Module` keeps its imports (MODULE_METADATA.IMPORTS, which Nest exports only from a deep path).
const IMPORTS_METADATA = 'imports';

/**
 * The modules whose `@Module({ imports })` list `registration`, as a person reads them. Nest links a
 * global module into every module, so what a module imports is read from its own metadata.
 */
function importersOf(modules: ModulesContainer, registration: DynamicModule): string {
  const names = [...modules.values()]
    .filter((module) => (Reflect.getMetadata(IMPORTS_METADATA, module.metatype) ?? []).includes(registration))
    .map((module) => module.metatype.name);
  return names.length ? names.join(', ') : 'a module';
}

/** The name, checked at once: the injection token is made from it before any factory runs. */
function asyncName(options: QueueAsyncOptions<{ name: string }>, method: string): string {
  if (typeof options?.name !== 'string' || options.name === '') throw asyncQueueName(method);
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
      if (given !== undefined && given !== name) throw factoryRenamed(name, given);
      return { ...made, name };
    },
  };
}
