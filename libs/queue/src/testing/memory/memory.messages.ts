import { QueueConfigError } from '../../errors';

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
