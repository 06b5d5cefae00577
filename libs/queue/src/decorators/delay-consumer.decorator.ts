import { SetMetadata } from '@nestjs/common';
import { DELAY_CONSUMER_METADATA } from '../queue.constants';
import type { DelayConsumerDecoratorOptions } from '../interfaces';

export interface DelayConsumerMetadata {
  queue: string;
  options: DelayConsumerDecoratorOptions;
}

/**
 * Makes a provider method handle due tasks of a DelayQueue: `(payload: T, ctx: DelayContext)`.
 * Resolving acknowledges the task; throwing fails the attempt (retried with backoff, then dead-lettered).
 * Delivery is at-least-once: make the handler idempotent. Options from configuration:
 * `{ inject: [ConfigService], useFactory: (config) => ({ concurrency: ... }) }`, resolved at start-up.
 */
export const DelayConsumer = (queue: string, options: DelayConsumerDecoratorOptions = {}): MethodDecorator =>
  SetMetadata<string, DelayConsumerMetadata>(DELAY_CONSUMER_METADATA, { queue, options });
