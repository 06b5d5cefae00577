import { QueueError, QueueInputError } from '../errors';

/** The errors of DelayQueue, and its warning, their texts in one place. */

export const occurrenceNotPlaced = (id: string, status: string) =>
  new QueueError(`the next occurrence of repeat "${id}" could not be placed (${status}); it is retried`);

/** A repeat's schedule refused: `why`, in the words of `repeat(id, every, payload, options)`. */
export const badRepeat = (why: string) => new QueueInputError(`repeat: ${why}`);

/** Logged when a queue's lease was given under its former name. */
export const leaseRenamed = (queue: string): string =>
  `delay queue "${queue}": visibilityTimeoutMs is deprecated, use leaseMs, the lease's name on both queues ` +
  '(it is read as leaseMs meanwhile)';
