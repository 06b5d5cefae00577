import { Injectable } from '@nestjs/common';
import { DiscoveryService, MetadataScanner } from '@nestjs/core';
import { requestScopedConsumer } from './queue.messages';
import { QueueMetadataAccessor } from './queue-metadata.accessor';
import type {
  BatchConsumerMetadata,
  DelayConsumerMetadata,
  QueueEventHandlerMetadata,
  TaskSourceMetadata,
} from './decorators';
import type { RecurringOptions } from './interfaces';

/** A decorated method of a provider or controller instance. */
export interface FoundMethod<M> {
  instance: object;
  method: string;
  /** `Class.method`, for log lines, events and error messages. */
  label: string;
  metadata: M;
}

export interface DiscoveredHandlers {
  batchConsumers: FoundMethod<BatchConsumerMetadata>[];
  delayConsumers: FoundMethod<DelayConsumerMetadata>[];
  eventHandlers: FoundMethod<QueueEventHandlerMetadata>[];
  recurring: FoundMethod<RecurringOptions>[];
  taskSources: FoundMethod<TaskSourceMetadata>[];
}

/**
 * Finds `@BatchConsumer`, `@DelayConsumer`, `@Recurring`, `@TaskSource` and `@OnQueueEvent` methods on every provider and
 * controller. It only looks (and refuses what could never run): QueueOrchestrator mounts what it finds.
 */
@Injectable()
export class QueueExplorer {
  constructor(
    private readonly discovery: DiscoveryService,
    private readonly scanner: MetadataScanner,
    private readonly accessor: QueueMetadataAccessor,
  ) {}

  explore(): DiscoveredHandlers {
    const found: DiscoveredHandlers = {
      batchConsumers: [],
      delayConsumers: [],
      eventHandlers: [],
      recurring: [],
      taskSources: [],
    };
    for (const wrapper of [...this.discovery.getProviders(), ...this.discovery.getControllers()]) {
      const { instance } = wrapper;
      // Aliases (useExisting) would report their target twice; a missing instance is a provider not built.
      if (!instance || wrapper.isAlias || typeof instance !== 'object') continue;
      // Through the instance, not the wrapper's metatype: useValue / useFactory providers have none.
      const prototype: Record<string, unknown> | null = Object.getPrototypeOf(instance);
      if (!prototype) continue;
      for (const method of this.scanner.getAllMethodNames(prototype)) {
        const batch = this.accessor.getBatchConsumer(prototype[method]);
        const delay = this.accessor.getDelayConsumer(prototype[method]);
        const listeners = this.accessor.getQueueEventHandlers(prototype[method]);
        const recurring = this.accessor.getRecurring(prototype[method]);
        const source = this.accessor.getTaskSource(prototype[method]);
        if (!batch && !delay && !listeners && !recurring && !source) continue;
        const label = `${(instance as object).constructor?.name ?? 'provider'}.${method}`;
        // Only a request creates such a provider: its handlers would never be called, silently.
        if (!wrapper.isDependencyTreeStatic()) {
          throw requestScopedConsumer(
            batch
              ? '@BatchConsumer'
              : delay
                ? '@DelayConsumer'
                : recurring
                  ? '@Recurring'
                  : source
                    ? '@TaskSource'
                    : '@OnQueueEvent',
            label,
          );
        }
        const at = { instance: instance as object, method, label };
        if (batch) found.batchConsumers.push({ ...at, metadata: batch });
        if (delay) found.delayConsumers.push({ ...at, metadata: delay });
        if (recurring) found.recurring.push({ ...at, metadata: recurring });
        if (source) found.taskSources.push({ ...at, metadata: source });
        for (const listener of listeners ?? []) found.eventHandlers.push({ ...at, metadata: listener });
      }
    }
    return found;
  }
}
