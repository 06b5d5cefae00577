import type { QueueKeys } from './keys';
import { invoke, type ScriptProtocol, type Sending, type ShardKeys } from './script-protocol';
import type { Scripts } from './scripts';
import type { ScriptSet } from './script-set';

/**
 * What a queue kind's store starts from: its scripts (its set added to the connection's), its keys, and
 * each shard's keys named once (`named`), so that every call of a script names the same strings without
 * building them.
 */
export abstract class ShardStore<Kind extends string, Keys extends ShardKeys<Kind>> {
  private readonly shards: Keys[];

  protected constructor(
    protected readonly scripts: Scripts,
    set: ScriptSet,
    readonly keys: QueueKeys<Kind>,
    shards: number,
    named: (keys: QueueKeys<Kind>, shard: number) => Keys,
  ) {
    scripts.add(set);
    this.shards = Array.from({ length: shards }, (_, shard) => named(keys, shard));
  }

  /** Calls a script of `shard` through its protocol. */
  protected call<In, Out>(
    protocol: ScriptProtocol<string, In, Out, Keys>,
    shard: number,
    input: In,
    sending?: Sending,
  ): Promise<Out> {
    return invoke(this.scripts, protocol, this.shards[shard], input, sending);
  }
}

/**
 * Runs `run` on slices of `items` of at most `size` each (calls sent together, each a bounded
 * script), and joins their results in order.
 */
export async function inChunks<I, O>(items: I[], size: number, run: (chunk: I[]) => Promise<O[]>): Promise<O[]> {
  if (items.length <= size) return run(items);
  const calls: Promise<O[]>[] = [];
  for (let from = 0; from < items.length; from += size) calls.push(run(items.slice(from, from + size)));
  return (await Promise.all(calls)).flat();
}
