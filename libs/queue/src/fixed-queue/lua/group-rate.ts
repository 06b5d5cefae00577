import type { GroupRateLimitOptions } from '../../interfaces';
import type { FixedShardKeys } from '../fixed-queue.keys';

/** The rate lists of `groups` (after their own lists in KEYS), when the queue has a groupRateLimit. */
export function rateKeys(shard: FixedShardKeys, groups: string[], rate: GroupRateLimitOptions | undefined): string[] {
  return rate ? groups.map((group) => shard.rate(group)) : [];
}

/** A groupRateLimit as the scripts take it (ARGV): its max (0: none) and its durationMs. */
export function rateArgs(rate: GroupRateLimitOptions | undefined): [number, number] {
  return rate ? [rate.max, rate.durationMs] : [0, 0];
}
