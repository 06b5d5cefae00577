import type { QueueKeys } from './keys';
import type { CallKey } from './call-keys';
import type { ListRead, ReplicaWait, Scripts } from './scripts';

/** The keys of one shard, as the scripts' protocols name them: of the key kinds `Kind` of its queue's kind. */
export interface ShardKeys<Kind extends string = string> {
  key(kind: Kind): string;
  /** The record of a keyed call (see the call-keys include). */
  call(name: string): string;
}

export function shardKeys<Kind extends string>(keys: QueueKeys<Kind>, shard: number): ShardKeys<Kind> {
  // A shard's own keys are named in every call: made once, so that every call writes the same flat string.
  const named = new Map<Kind, string>();
  return {
    key: (kind) => {
      let key = named.get(kind);
      if (key === undefined) named.set(kind, (key = keys.key(shard, kind)));
      return key;
    },
    call: (name) => keys.member(shard, 'call', name),
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

/**
 * The call-keys section of a call whose items carry call keys (see the call-keys include), or none:
 * its record keys, to follow the call's KEYS, and its arguments, to follow its ARGV.
 */
export function callKeysOf(
  shard: ShardKeys,
  calls: readonly (CallKey | undefined)[],
): { keys: string[]; args: (string | number)[] } | undefined {
  let keys: string[] | undefined;
  const args: (string | number)[] = [];
  const deadlines: number[] = [];
  let windowMs = 0;
  for (let i = 0; i < calls.length; i++) {
    const call = calls[i];
    if (call === undefined) continue;
    (keys ??= []).push(shard.call(call.name));
    args.push(i + 1);
    deadlines.push(call.deadline ?? 0);
    windowMs = Math.max(windowMs, call.windowMs);
  }
  if (keys === undefined) return undefined;
  args.push(...deadlines, windowMs, keys.length);
  return { keys, args };
}

/** The keys of `kinds`, in that order. */
export function kindsOf<Kind extends string>(shard: ShardKeys<Kind>, kinds: readonly NoInfer<Kind>[]): string[] {
  return kinds.map((kind) => shard.key(kind));
}
