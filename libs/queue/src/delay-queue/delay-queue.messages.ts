import { QueueError, QueueInputError } from '../errors';

/** The errors of DelayQueue, their texts in one place. */

export const occurrenceNotPlaced = (id: string, status: string) =>
  new QueueError(`the next occurrence of repeat "${id}" could not be placed (${status}); it is retried`);

/** A repeat's schedule refused: `why`, in the words of `repeat(id, every, payload, options)`. */
export const badRepeat = (why: string) => new QueueInputError(`repeat: ${why}`);
