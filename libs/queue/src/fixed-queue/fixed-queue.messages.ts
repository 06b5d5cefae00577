/** The texts of FixedQueue's errors, in one place. */

export const retriesOnAtLeastOnce = (label: string, queue: string) =>
  `@BatchConsumer on ${label}: retries applies to at-most-once queues; "${queue}" is at-least-once ` +
  'and retries through Redis (set maxAttempts and retryDelayMs on the queue instead)';
