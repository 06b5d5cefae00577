import { type DynamicModule, Module } from '@nestjs/common';
import { ConsumerRegistry } from '../consumer/consumer.registry';
import { QueueEvents } from '../events/queue-events';
import { QueueProcesses } from '../queue-processes';
import { QueueRegistry } from '../queue.registry';
import { RecurringSchedules } from '../recurring/recurring-schedules';
import { RedisConnection } from '../redis/redis-connection';
import type { QueueMetricsOptions } from '../interfaces';
import { QueueMetrics } from './queue-metrics';

/**
 * Prometheus metrics of every queue of the application (needs `prom-client`, an optional dependency,
 * loaded only when this module is imported). Expose them with your usual `/metrics` endpoint.
 */
@Module({})
export class QueueMetricsModule {
  static register(options: QueueMetricsOptions = {}): DynamicModule {
    return {
      module: QueueMetricsModule,
      providers: [
        {
          provide: QueueMetrics,
          useFactory: (
            events: QueueEvents,
            registry: QueueRegistry,
            recurring: RecurringSchedules,
            consumers: ConsumerRegistry,
            connection: RedisConnection,
            processes: QueueProcesses,
          ) => new QueueMetrics(events, registry, options, recurring, consumers, connection, processes),
          inject: [QueueEvents, QueueRegistry, RecurringSchedules, ConsumerRegistry, RedisConnection, QueueProcesses],
        },
      ],
      exports: [QueueMetrics],
    };
  }
}
