import type { QueueKeys } from '../redis/keys';
import { shardKeys, type ScriptProtocol, type ShardKeys } from '../redis/script-protocol';

/** The keys of a FixedQueue's shard (see the scripts' Input blocks). */
export const FIXED_SHARD_KEY_KINDS = [
  'ready',
  'stats',
  'lastPush',
  'lens',
  'held',
  'pausedGroups',
  'leases',
  'deadData',
  'dead',
  'errors',
] as const;

export type FixedShardKeyKind = (typeof FIXED_SHARD_KEY_KINDS)[number];

/** Keys of a FixedQueue's shard that hold one entry per name: its groups' lists and their rate windows. */
export const FIXED_MEMBER_KEY_KINDS = ['g', 'rate'] as const;

/** The keys of a FixedQueue's shard, as its scripts' protocols name them. */
export interface FixedShardKeys extends ShardKeys<FixedShardKeyKind> {
  /** A group's list. */
  group(name: string): string;
  /** A group's batch starts under groupRateLimit (see the rate-limit include). */
  rate(name: string): string;
}

/** The protocol of a FixedQueue script (see `ScriptProtocol`). */
export type FixedScript<Name extends string, In, Out> = ScriptProtocol<Name, In, Out, FixedShardKeys>;

export function fixedShardKeys(keys: QueueKeys<FixedShardKeyKind>, shard: number): FixedShardKeys {
  // A push names a group's list per message: one concatenation, not the four of the whole name.
  const groups = keys.member(shard, 'g', '');
  return {
    ...shardKeys(keys, shard),
    group: (name) => groups + name,
    rate: (name) => keys.member(shard, 'rate', name),
  };
}
