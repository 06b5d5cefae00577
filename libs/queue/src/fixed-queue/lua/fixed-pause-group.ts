import type { FixedScript } from '../fixed-queue.keys';
import { kindsOf } from '../../redis/script-protocol';

/** Pauses a group (see fixed-pause-group.lua): true when this call paused it. */
export const fixedPauseGroup: FixedScript<'fixed-pause-group', string, boolean> = {
  script: 'fixed-pause-group',
  keys: (shard) => kindsOf(shard, ['ready', 'pausedGroups']),
  args: (group) => [group],
  decode: (reply) => reply === 1,
};
