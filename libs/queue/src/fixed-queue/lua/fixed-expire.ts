import type { FixedScript } from '../fixed-queue.keys';
import { kindsOf } from '../../redis/script-protocol';

/** Deletes the listed groups idle for ttlMs (see fixed-expire.lua): how many messages each lost. */
export const fixedExpire: FixedScript<
  'fixed-expire',
  { ttlMs: number; groups: string[] },
  { serverNow: number; expired: number[] }
> = {
  script: 'fixed-expire',
  keys: (shard, { groups }) => [
    ...kindsOf(shard, ['ready', 'stats', 'lastPush', 'held', 'pausedGroups']),
    ...groups.map((group) => shard.group(group)),
  ],
  args: ({ ttlMs, groups }) => [ttlMs, ...groups],
  decode: (reply) => {
    const [serverNow, ...expired] = reply as number[];
    return { serverNow, expired };
  },
};
