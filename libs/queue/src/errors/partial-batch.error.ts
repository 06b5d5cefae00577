import { describeError } from '../utils/errors';
import { badPartialCount, partiallyHandled } from './errors.messages';
import { QueueError } from './queue.error';

/**
 * Thrown by the handler of an at-least-once FixedQueue when it handled the first `acknowledged`
 * messages of its batch and not the rest (an upstream took the first 100 of 128): those are
 * acknowledged, and the rest come back first, in order, as the batch's next attempt, after the retry
 * delay (after `maxAttempts`, dead-lettered or holding the group, as `onExhausted` says). `cause` says
 * why the rest failed. At most once, it fails the whole batch as any error does.
 *
 * ```ts
 * const taken = await upstream.send(events); // how many it accepted, in order
 * if (taken < events.length) throw new PartialBatchError(taken, new Error('upstream full'));
 * ```
 */
export class PartialBatchError extends QueueError {
  constructor(
    /** Messages handled, from the batch's first: 0 to the batch's length. */
    readonly acknowledged: number,
    cause?: unknown,
  ) {
    // Refused here, where the handler's author sees it, rather than logged later as a count that
    // names no part of the batch ('2' would read as 2 in that line).
    if (typeof acknowledged !== 'number' || !Number.isInteger(acknowledged) || acknowledged < 0)
      throw badPartialCount(acknowledged);
    super(
      partiallyHandled(acknowledged, cause === undefined ? undefined : describeError(cause)),
      cause === undefined ? undefined : { cause },
    );
  }
}
