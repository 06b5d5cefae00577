import { QueueError, QueueInputError } from '../errors';

/** The errors of DelayQueue, their texts in one place. */

export const occurrenceNotPlaced = (id: string, status: string) =>
  new QueueError(`the next occurrence of repeat "${id}" could not be placed (${status}); it is retried`);

/** A repeat's schedule refused: `why`, in the words of `repeat(id, every, payload, options)`. */
export const badRepeat = (why: string) => new QueueInputError(`repeat: ${why}`);

export const repeatEnded = (id: string) =>
  new QueueInputError(`repeat "${id}": its schedule has no tick after now (see endAt); nothing was written`);

export const repeatClockMoving = (id: string) =>
  new QueueError(`repeat "${id}": Redis' clock kept moving away from this process' estimate; try again`);

/** What a consumer's handler of a cancelled task is told (its signal's reason). */
export const taskCancelled = (id: string) => new Error(`task "${id}" was cancelled`);

export const badListState = (state: unknown) =>
  new QueueInputError(`list: state must be 'scheduled', 'active' or 'dead', got ${String(state)}`);

export const badRepeatsCursor = (cursor: unknown) =>
  new QueueInputError(`repeats: cursor must be one returned by an earlier page, got ${String(cursor)}`);
