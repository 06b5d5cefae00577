import { kindsOf, type ScriptProtocol } from '../../redis/script-protocol';

/** Deletes a task in whatever state it is (see delay-cancel.lua): whether it existed. */
export const delayCancel: ScriptProtocol<'delay-cancel', string, boolean> = {
  script: 'delay-cancel',
  keys: (shard) => kindsOf(shard, ['due', 'active', 'data', 'dead', 'errors', 'runs', 'repeats', 'successors']),
  args: (id) => [id],
  decode: (reply) => reply === 1,
};
