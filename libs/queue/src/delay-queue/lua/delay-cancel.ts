import type { DelayScript } from '../delay-queue.keys';
import { callKeysOf, kindsOf } from '../../redis/script-protocol';
import { LateTry, type CallKey } from '../../redis/call-keys';

export interface DelayCancelInput {
  id: string;
  /** A cancel that may reach Redis more than once: applied once. */
  call?: CallKey;
}

/** Deletes a task in whatever state it is (see delay-cancel.lua): whether it existed; LateTry for a late try. */
export const delayCancel: DelayScript<'delay-cancel', DelayCancelInput, boolean> = {
  script: 'delay-cancel',
  keys: (shard, { call }) => {
    const keys = kindsOf(shard, ['due', 'active', 'data', 'dead', 'errors', 'runs', 'repeats', 'successors', 'passes']);
    return call === undefined ? keys : [...keys, ...callKeysOf(shard, [call])!.keys];
  },
  args: ({ id, call }, shard) => (call === undefined ? [id] : [id, ...callKeysOf(shard, [call])!.args]),
  decode: (reply) => {
    if (reply === -1) throw new LateTry();
    return reply === 1;
  },
};
