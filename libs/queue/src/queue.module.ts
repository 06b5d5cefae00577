import { DynamicModule, Module, Provider } from '@nestjs/common';
import { DiscoveryModule } from '@nestjs/core';
import { FixedQueue } from './fixed-queue/fixed-queue';
import { DelayQueue } from './delay-queue/delay-queue';
import { QueueEvents } from './events/queue-events';
import { QueueHealthIndicator } from './health/queue-health.indicator';
import { getDelayQueueToken, getFixedQueueToken } from './queue.constants';
import { ConsumerStatusRegistry } from './consumer-status.registry';
import { QueueExplorer } from './queue.explorer';
import { QueueOrchestrator } from './queue.orchestrator';
import { QueueMetadataAccessor } from './queue-metadata.accessor';
import { ConfigurableModuleClass, MODULE_OPTIONS_TOKEN } from './queue.module-definition';
import { QueueRegistry } from './queue.registry';
import { QueueSettings } from './queue.settings';
import { RedisConnection } from './redis/redis-connection';
import type { DelayQueueOptions, FixedQueueOptions, QueueModuleOptions } from './interfaces';

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
    ConsumerStatusRegistry,
    QueueEvents,
    QueueHealthIndicator,
  ],
  exports: [QueueSettings, RedisConnection, QueueRegistry, QueueEvents, QueueHealthIndicator],
})
export class QueueModule extends ConfigurableModuleClass {
  /** Registers a FixedQueue, injectable with `@InjectFixedQueue(name)`. */
  static registerFixedQueue(options: FixedQueueOptions): DynamicModule {
    return queueModule(getFixedQueueToken(options?.name), (connection, settings, registry, events) =>
      registry.register('fixed', options?.name, options, () => new FixedQueue(options, connection, settings, events)),
    );
  }

  /** Registers a DelayQueue, injectable with `@InjectDelayQueue(name)`. */
  static registerDelayQueue(options: DelayQueueOptions): DynamicModule {
    return queueModule(getDelayQueueToken(options?.name), (connection, settings, registry, events) =>
      registry.register('delay', options?.name, options, () => new DelayQueue(options, connection, settings, events)),
    );
  }
}

/** Holds the queue registered by one `registerFixedQueue` / `registerDelayQueue` call. */
@Module({})
export class QueueFeatureModule {}

function queueModule(
  token: string,
  create: (
    connection: RedisConnection,
    settings: QueueSettings,
    registry: QueueRegistry,
    events: QueueEvents,
  ) => unknown,
): DynamicModule {
  const provider: Provider = {
    provide: token,
    useFactory: create,
    inject: [RedisConnection, QueueSettings, QueueRegistry, QueueEvents],
  };
  return { module: QueueFeatureModule, providers: [provider], exports: [token] };
}
