import { QueueConfigError, QueueInputError } from '../errors';

/** The errors of FixedQueue, their texts in one place. */

export const retriesOnAtLeastOnce = (label: string, queue: string) =>
  new QueueConfigError(
    `@BatchConsumer on ${label}: maxAttempts (formerly retries) above 1 applies to at-most-once queues; ` +
      `"${queue}" is at-least-once and retries through Redis (set maxAttempts and backoff on the queue instead)`,
  );

/** A log line's text: the handler's PartialBatchError counted messages its batch does not have. */
export const partialOutOfRange = (acknowledged: number, size: number) =>
  `PartialBatchError(${acknowledged}) names no part of a batch of ${size} messages (0 to ${size}): ` +
  'no message is acknowledged, the whole batch fails';

export const pushManyNotArray = (messages: unknown) =>
  new QueueInputError(`pushMany expects an array of messages, got ${typeof messages}`);

export const pushManyTooMany = (most: number, count: number) =>
  new QueueInputError(`pushMany takes at most ${most} messages per call, got ${count}; split the array`);

export const pushManyTooLarge = (most: number, bytes: number) =>
  new QueueInputError(
    `pushMany takes at most ${most} bytes (UTF-8) of serialised messages per call, got ${bytes}; split the array`,
  );
