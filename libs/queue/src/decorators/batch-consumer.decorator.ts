import { SetMetadata } from '@nestjs/common';
import { BATCH_CONSUMER_METADATA } from '../queue.constants';
import type { BatchConsumerDecoratorOptions } from '../interfaces';

export interface BatchConsumerMetadata {
  queue: string;
  options: BatchConsumerDecoratorOptions;
}

/**
 * Makes a provider method consume batches of a FixedQueue: `(messages: T[], ctx: BatchContext)`.
 * Every message of a batch belongs to `ctx.group`. Continuous by default; with `cron` or
 * `intervalMs` it drains every due group on that schedule (needs `ScheduleModule.forRoot()`).
 * Options from configuration: `{ inject: [ConfigService], useFactory: (config) => ({ cron: ... }) }`,
 * resolved when the application starts.
 */
export const BatchConsumer = (queue: string, options: BatchConsumerDecoratorOptions = {}): MethodDecorator =>
  SetMetadata<string, BatchConsumerMetadata>(BATCH_CONSUMER_METADATA, { queue, options });
