import { DELAY_QUEUE_SCRIPTS } from './delay-queue.scripts';
import { kindsOf } from '../../redis/script-protocol';

/** Deletes a task in whatever state it is (see delay-cancel.lua): whether it existed. */
export const delayCancel = DELAY_QUEUE_SCRIPTS.define<'delay-cancel', string, boolean>({
  script: 'delay-cancel',
  keys: (shard) =>
    kindsOf(shard, ['due', 'active', 'data', 'dead', 'errors', 'runs', 'repeats', 'successors', 'passes']),
  args: (id) => [id],
  decode: (reply) => reply === 1,
});
