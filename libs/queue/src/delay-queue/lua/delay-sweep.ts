import type { DelayScript } from '../delay-queue.keys';
import { kindsOf } from '../../redis/script-protocol';

export interface SweepInput {
  mark: string;
  /** The pass' id (see delay-pass): what was written since it began is kept. */
  pass: string;
  cursor: string;
  count: number;
}

export interface SweepStep {
  /** '0' once the marks are all read. */
  cursor: string;
  swept: number;
}

/** Cancels a page of the tasks a sweeping pass marked and did not list (see delay-sweep.lua). */
export const delaySweep: DelayScript<'delay-sweep', SweepInput, SweepStep> = {
  script: 'delay-sweep',
  keys: (shard) => kindsOf(shard, ['due', 'data', 'runs', 'errors', 'repeats', 'marks', 'passes']),
  args: ({ mark, cursor, count, pass }) => [mark, cursor, count, pass],
  decode: (reply) => {
    const [cursor, swept] = reply as [string, number];
    return { cursor, swept };
  },
};
