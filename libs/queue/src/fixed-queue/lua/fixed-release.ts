import type { FixedScript } from '../fixed-queue.keys';
import { kindsOf } from '../../redis/script-protocol';
import { decodePerDelivery } from '../../redis/lua/per-delivery';
import type { GroupLease } from './fixed-ack';

/** A group lease shutdown gives back, and whether its attempt counts (its handler ran past handlerTimeoutMs). */
export interface GivenBackLease extends GroupLease {
  counted?: boolean;
}

/** Gives unfinished deliveries back (see fixed-release.lua): true for each given back, false where stale. */
export const fixedRelease: FixedScript<'fixed-release', { error: string; leases: GivenBackLease[] }, boolean[]> = {
  script: 'fixed-release',
  keys: (shard) => kindsOf(shard, ['ready', 'held', 'leases', 'pausedGroups', 'stats', 'errors']),
  args: ({ error, leases }) => [
    error,
    ...leases.flatMap(({ group, token, counted }) => [group, token, counted ? '1' : '0']),
  ],
  decode: decodePerDelivery,
};
