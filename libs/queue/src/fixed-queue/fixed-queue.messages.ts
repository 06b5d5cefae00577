import { QueueConfigError } from '../errors';

/** The errors of FixedQueue, their texts in one place. */

export const retriesOnAtLeastOnce = (label: string, queue: string) =>
  new QueueConfigError(
    `@BatchConsumer on ${label}: retries applies to at-most-once queues; "${queue}" is at-least-once ` +
      'and retries through Redis (set maxAttempts and retryDelayMs on the queue instead)',
  );
