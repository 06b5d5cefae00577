import type { FixedScript } from '../fixed-queue.keys';
import { kindsOf } from '../../redis/script-protocol';

/** A shard's groups nobody may have pushed to for ttlMs, and when the next may be (see fixed-idle.lua). */
export interface IdleGroups {
  /** Oldest first. */
  groups: string[];
  /** Server ms before which no group of the shard can be idle for ttlMs (when `groups` is empty). */
  notBefore: number;
  serverNow: number;
}

export const fixedIdle: FixedScript<'fixed-idle', { ttlMs: number; count: number }, IdleGroups> = {
  script: 'fixed-idle',
  keys: (shard) => kindsOf(shard, ['lastPush']),
  args: ({ ttlMs, count }) => [ttlMs, count],
  decode: (reply, { ttlMs }) => {
    const [serverNow, oldest, ...groups] = reply as [number, number, ...string[]];
    return { groups, serverNow, notBefore: (oldest < 0 ? serverNow : oldest) + ttlMs };
  },
};
