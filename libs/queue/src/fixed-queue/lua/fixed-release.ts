import { FIXED_QUEUE_SCRIPTS } from './fixed-queue.scripts';
import { kindsOf } from '../../redis/script-protocol';
import { decodePerDelivery } from '../../redis/lua/per-delivery';
import type { Delivery } from './fixed-ack';

/** A delivery shutdown gives back, and whether its attempt counts (its handler ran past handlerTimeoutMs). */
export interface GivenBackDelivery extends Delivery {
  counted?: boolean;
}

/** Gives unfinished deliveries back (see fixed-release.lua): true for each given back, false where stale. */
export const fixedRelease = FIXED_QUEUE_SCRIPTS.define<
  'fixed-release',
  { error: string; deliveries: GivenBackDelivery[] },
  boolean[]
>({
  script: 'fixed-release',
  keys: (shard) => kindsOf(shard, ['ready', 'held', 'leases', 'pausedGroups', 'stats', 'errors']),
  args: ({ error, deliveries }) => [
    error,
    ...deliveries.flatMap(({ group, token, counted }) => [group, token, counted ? '1' : '0']),
  ],
  decode: decodePerDelivery,
});
