import type { DelayScript } from '../delay-queue.keys';
import { kindsOf } from '../../redis/script-protocol';

/** Removes a repeat and its pending occurrence (see delay-unrepeat.lua): whether it existed. */
export const delayUnrepeat: DelayScript<'delay-unrepeat', string, boolean> = {
  script: 'delay-unrepeat',
  keys: (shard) => kindsOf(shard, ['due', 'active', 'data', 'dead', 'errors', 'runs', 'repeats']),
  args: (id) => [id],
  decode: (reply) => reply === 1,
};
