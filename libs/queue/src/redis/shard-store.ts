import type { QueueKeys } from './keys';
import { invoke, shardKeys, type ScriptProtocol, type Sending, type ShardKeys } from './script-protocol';
import type { Scripts } from './scripts';

/**
 * What a queue kind's store starts from: its scripts, its keys, and each shard's keys named once, so
 * that every call of a script names the same strings without building them.
 */
export abstract class ShardStore {
  private readonly shards: ShardKeys[];

  protected constructor(
    protected readonly scripts: Scripts,
    readonly keys: QueueKeys,
    shards: number,
  ) {
    this.shards = Array.from({ length: shards }, (_, shard) => shardKeys(keys, shard));
  }

  /** Calls a script of `shard` through its protocol. */
  protected call<In, Out>(
    protocol: ScriptProtocol<string, In, Out>,
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
