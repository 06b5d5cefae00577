import { QueueError } from './errors';

export const advanceNeedsMemory = () =>
  new QueueError(
    "QueueClock.advance needs connection: 'memory://': on a Redis server the queues' clock is the server's own, " +
      'which only time moves',
  );

export const badAdvance = (ms: unknown) =>
  new QueueError(`QueueClock.advance takes a whole, non-negative number of milliseconds; received ${String(ms)}`);

export const advanceStalled = (waitedMs: number, running: string[]) =>
  new QueueError(
    running.length > 0
      ? `QueueClock.advance waited ${waitedMs} ms for handlers to settle before moving the clock further, and these ` +
          `still run: ${running.join(', ')}. The clock does not move while a handler runs (its lease would lapse); ` +
          'resolve what they wait for before advancing, or pass a longer settleTimeoutMs'
      : `QueueClock.advance waited ${waitedMs} ms for the queues to go quiet before moving the clock further, and ` +
          'commands kept running with no handler under way (a client of the instance calling in a loop?); pass a ' +
          'longer settleTimeoutMs if that work ends by itself',
  );

export const manyOccurrences = (ms: number, occurrences: number, limit: number, leftMs: number) =>
  `QueueClock.advance(${ms}) has stepped through ${occurrences} occurrences (more than ${limit}), each handled in ` +
  `turn as time would, with ${leftMs} ms still to go: a short repeat over a long advance takes real time (about a ` +
  'millisecond per occurrence). Advance in the steps the test checks, or give the test a longer interval';
