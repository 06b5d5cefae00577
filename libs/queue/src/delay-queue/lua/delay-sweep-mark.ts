import type { DelayScript } from '../delay-queue.keys';
import { kindsOf } from '../../redis/script-protocol';

export interface SweepMarkInput {
  mark: string;
  first: number;
  count: number;
}

/** Marks a page of a shard's scheduled tasks for a sweeping pass (see delay-sweep-mark.lua): ranks read. */
export const delaySweepMark: DelayScript<'delay-sweep-mark', SweepMarkInput, number> = {
  script: 'delay-sweep-mark',
  keys: (shard) => kindsOf(shard, ['due', 'repeats', 'marks']),
  args: ({ mark, first, count }) => [mark, first, count],
  decode: (reply) => reply as number,
};
