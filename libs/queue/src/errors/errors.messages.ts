import { QueueInputError } from './queue.error';

/** The errors of the error classes themselves, their texts in one place. */

export const badPartialCount = (acknowledged: unknown) =>
  new QueueInputError(
    `PartialBatchError needs the number of messages handled, a whole number ≥ 0, got ${describeCount(acknowledged)}`,
  );

/** A PartialBatchError's message: what its handler handled, and why it stopped. */
export const partiallyHandled = (acknowledged: number, why: string | undefined) =>
  `the first ${acknowledged} messages of the batch were handled, not the rest` + (why === undefined ? '' : `: ${why}`);

function describeCount(value: unknown): string {
  return typeof value === 'string' ? `'${value}' (a string)` : String(value);
}
