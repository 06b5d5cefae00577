/** Items by shard, in the order given. */
export function byShard<T extends { shard: number }>(items: Iterable<T>): Map<number, T[]> {
  const shards = new Map<number, T[]>();
  for (const item of items) {
    const list = shards.get(item.shard);
    if (list) list.push(item);
    else shards.set(item.shard, [item]);
  }
  return shards;
}
