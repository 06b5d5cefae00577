/** What one script call of a newest-first listing returned. */
export interface NewestFirstPage<T> {
  /** The items it could read (one listed but gone meanwhile is left out). */
  items: T[];
  /** How many it listed: fewer than asked means the end. */
  listed: number;
}

/**
 * Reads up to `limit` items of a shard's sorted set (scored by a death time) newest first, `perCall` per
 * script call, so that no call holds Redis for long. Each call starts at the latest time not fully
 * listed, past the items at exactly that time that earlier calls listed: items dying at the same
 * millisecond are neither repeated nor skipped.
 */
export async function readNewestFirst<T extends { diedAt: number }>(
  limit: number,
  perCall: number,
  read: (count: number, latest: string, listedAtLatest: number) => Promise<NewestFirstPage<T>>,
): Promise<T[]> {
  const items: T[] = [];
  let latest = '+inf';
  let listedAtLatest = 0;
  while (items.length < limit) {
    const count = Math.min(perCall, limit - items.length);
    const page = await read(count, latest, listedAtLatest);
    items.push(...page.items);
    if (page.listed < count || items.length === 0) break;
    // Every item read so far at the latest time counts, those of earlier calls included.
    latest = String(items[items.length - 1].diedAt);
    listedAtLatest = 0;
    for (let i = items.length - 1; i >= 0 && String(items[i].diedAt) === latest; i--) listedAtLatest++;
  }
  return items;
}

/** The newest `limit` of every shard's newest `limit` (`read(shard)`), newest first. */
export async function newestOfShards<T extends { diedAt: number }>(
  shards: number,
  limit: number,
  read: (shard: number) => Promise<T[]>,
): Promise<T[]> {
  const lists = await Promise.all(Array.from({ length: shards }, (_, shard) => read(shard)));
  return lists
    .flat()
    .sort((a, b) => b.diedAt - a.diedAt)
    .slice(0, limit);
}
