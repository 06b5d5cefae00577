import { Injectable } from '@nestjs/common';
import { Reflector } from '@nestjs/core';
import {
  BATCH_CONSUMER_METADATA,
  DELAY_CONSUMER_METADATA,
  QUEUE_EVENT_METADATA,
  RECURRING_METADATA,
  TASK_SOURCE_METADATA,
} from './queue.constants';
import type { RecurringOptions } from './interfaces';
import type {
  BatchConsumerMetadata,
  DelayConsumerMetadata,
  QueueEventHandlerMetadata,
  TaskSourceMetadata,
} from './decorators';

/** Reads consumer metadata from methods; tolerant of anything that is not a function. */
@Injectable()
export class QueueMetadataAccessor {
  constructor(private readonly reflector: Reflector) {}

  getBatchConsumer(target: unknown): BatchConsumerMetadata | undefined {
    return typeof target === 'function' ? this.reflector.get(BATCH_CONSUMER_METADATA, target) : undefined;
  }

  getDelayConsumer(target: unknown): DelayConsumerMetadata | undefined {
    return typeof target === 'function' ? this.reflector.get(DELAY_CONSUMER_METADATA, target) : undefined;
  }

  getQueueEventHandlers(target: unknown): QueueEventHandlerMetadata[] | undefined {
    return typeof target === 'function' ? this.reflector.get(QUEUE_EVENT_METADATA, target) : undefined;
  }

  getRecurring(target: unknown): RecurringOptions | undefined {
    return typeof target === 'function' ? this.reflector.get(RECURRING_METADATA, target) : undefined;
  }

  getTaskSource(target: unknown): TaskSourceMetadata | undefined {
    return typeof target === 'function' ? this.reflector.get(TASK_SOURCE_METADATA, target) : undefined;
  }
}
