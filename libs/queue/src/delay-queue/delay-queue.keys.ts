import type { ScriptProtocol, ShardKeys } from '../redis/script-protocol';

/** The keys of a DelayQueue's shard (see the scripts' Input blocks). */
export const DELAY_SHARD_KEY_KINDS = [
  'due',
  'active',
  'data',
  'dead',
  'stats',
  'errors',
  'runs',
  'successors',
  'repeats',
  'declarations',
  'marks',
  'passes',
] as const;

export type DelayShardKeyKind = (typeof DELAY_SHARD_KEY_KINDS)[number];

/** The keys of a DelayQueue's shard, as its scripts' protocols name them. */
export type DelayShardKeys = ShardKeys<DelayShardKeyKind>;

/** The protocol of a DelayQueue script (see `ScriptProtocol`). */
export type DelayScript<Name extends string, In, Out> = ScriptProtocol<Name, In, Out, DelayShardKeys>;
