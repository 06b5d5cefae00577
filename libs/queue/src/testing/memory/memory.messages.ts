import { QueueConfigError, QueueError } from '../../errors';

export const badMemoryUrl = (url: string, reason: string) =>
  new QueueConfigError(
    `Invalid memory connection "${url}": ${reason}. Use memory:// (an instance of the application's own), ` +
      'memory://<name> (one instance shared by every application of this process naming it), and optionally ' +
      '?clock=manual (the default: the clock stands still until QueueClock.advance moves it) or ?clock=system',
  );

export const memoryClockConflict = (name: string, existing: string, wanted: string) =>
  new QueueConfigError(
    `The memory instance "${name}" already runs with clock=${existing} in this process; it cannot also run with ` +
      `clock=${wanted}. Name another instance, or use the same clock`,
  );

export const memoryWarning = (target: string) =>
  `Queues run in this process' memory (${target}), with no Redis server: nothing survives the process, and no ` +
  'other process sees them. For tests and local development only';

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
