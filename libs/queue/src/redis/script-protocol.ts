import type { QueueKeys, ShardKeyKind } from './keys';
import type { ListRead, ReplicaWait, Scripts } from './scripts';

/** The keys of one shard, as the scripts' protocols name them. */
export interface ShardKeys {
  key(kind: ShardKeyKind): string;
  /** A FixedQueue group's list. */
  group(name: string): string;
  /** A FixedQueue group's batch starts under groupRateLimit (see the rate-limit include). */
  rate(name: string): string;
}

export function shardKeys(keys: QueueKeys, shard: number): ShardKeys {
  // A shard's own keys are named in every call: made once, so that every call writes the same flat string.
  const named = new Map<ShardKeyKind, string>();
  // A push names a group's list per message: one concatenation, not the four of the whole name.
  const groups = keys.member(shard, 'g', '');
  return {
    key: (kind) => {
      let key = named.get(kind);
      if (key === undefined) named.set(kind, (key = keys.key(shard, kind)));
      return key;
    },
    group: (name) => groups + name,
    rate: (name) => keys.member(shard, 'rate', name),
  };
}

/**
 * The protocol of one Lua script, in one place beside its `.lua`: the keys it declares (KEYS, in the
 * order its Input block reads them), its arguments (ARGV), and what its reply means. Nothing else
 * reads a reply by position. `Keys` names the keys: a shard's (most scripts), or the queue's.
 */
export interface ScriptProtocol<Name extends string, In, Out, Keys = ShardKeys> {
  /** The script's name, and its file's (`<name>.lua`). */
  readonly script: Name;
  keys(keys: Keys, input: In): string[];
  args(input: In, keys: Keys): (string | number)[];
  /** Lists read in the same MULTI, just before the script (the claims: see fixed-claim-unordered). */
  reads?(keys: Keys, input: In): ListRead[];
  /** `lists`: what `reads` returned, in its order. */
  decode(reply: unknown, input: In, lists: string[][]): Out;
}

/** How a call is sent (see `Scripts`): queued with the tick's other commands, at once, or then waited on by replicas. */
export type Sending = 'queued' | 'now' | { replicas: ReplicaWait };

/** Calls a script through its protocol (defined by its kind's `ScriptSet`, see script-registry). */
export async function invoke<In, Out, Keys>(
  scripts: Scripts,
  protocol: ScriptProtocol<string, In, Out, Keys>,
  named: Keys,
  input: In,
  sending: Sending = 'queued',
): Promise<Out> {
  const keys = protocol.keys(named, input);
  const args = protocol.args(input, named);
  const reads = protocol.reads?.(named, input) ?? [];
  if (reads.length > 0) {
    const { lists, result } = await scripts.runAfterReads(protocol.script, keys, args, reads);
    return protocol.decode(result, input, lists);
  }
  let reply: unknown;
  if (sending === 'queued') reply = await scripts.run(protocol.script, keys, args);
  else if (sending === 'now') reply = await scripts.runNow(protocol.script, keys, args);
  else reply = await scripts.runReplicated(protocol.script, keys, args, sending.replicas);
  return protocol.decode(reply, input, []);
}

/** The keys of `kinds`, in that order. */
export function kindsOf(shard: ShardKeys, kinds: readonly ShardKeyKind[]): string[] {
  return kinds.map((kind) => shard.key(kind));
}
