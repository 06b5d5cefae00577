import type { FixedScript } from '../fixed-queue.keys';
import { kindsOf } from '../../redis/script-protocol';

/** Deletes a group's messages (see fixed-clear.lua): how many. */
export const fixedClear: FixedScript<'fixed-clear', string, number> = {
  script: 'fixed-clear',
  keys: (shard, group) => [...kindsOf(shard, ['ready', 'stats', 'lastPush', 'held', 'errors']), shard.group(group)],
  args: (group) => [group],
  decode: (reply) => reply as number,
};
