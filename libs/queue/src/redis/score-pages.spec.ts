import { QueueInputError } from '../errors';
import { ScorePages, type Scored, type ShardRead } from './score-pages';

/** Shards as sorted sets would give them: by score, ties in member order (reversed when descending). */
function shardsOf(entries: Scored[], shards: number, descending: boolean): ShardRead {
  const sets = Array.from({ length: shards }, (_, shard) =>
    entries
      .filter((entry) => entry.shard === shard)
      .sort((a, b) => a.score - b.score || (a.member < b.member ? -1 : 1)),
  );
  if (descending) sets.forEach((set) => set.reverse());
  return async (shard, score, skip, count) => {
    const from = sets[shard].filter((entry) => (descending ? entry.score <= score : entry.score >= score));
    return from.slice(skip, skip + count);
  };
}

async function listAll(pages: ScorePages, read: ShardRead, limit: number) {
  const listed: Scored[] = [];
  let cursor: string | undefined;
  for (let calls = 0; calls < 10_000; calls++) {
    const page = await pages.page(cursor, limit, read);
    expect(page.items.length).toBeLessThanOrEqual(limit);
    listed.push(...page.items);
    if (page.cursor === null) return listed;
    cursor = page.cursor;
  }
  throw new Error('never ended');
}

describe('ScorePages', () => {
  it.each([
    [false, 1],
    [false, 7],
    [true, 3],
    [true, 50],
  ])(
    'lists every member of every shard exactly once, in score order (descending %s, limit %i), ties and all',
    async (descending, limit) => {
      const entries: Scored[] = [];
      // Few distinct scores: long runs of ties across and within shards.
      for (let i = 0; i < 300; i++) entries.push({ shard: i % 5, member: `m${i}`, score: 1000 + ((i * 7) % 13) });
      const listed = await listAll(new ScorePages(5, descending), shardsOf(entries, 5, descending), limit);
      expect(listed.map((entry) => entry.member).sort()).toEqual(entries.map((entry) => entry.member).sort());
      const scores = listed.map((entry) => entry.score);
      expect(scores).toEqual([...scores].sort((a, b) => (descending ? b - a : a - b)));
    },
  );

  it('ends at once on empty shards, and refuses a cursor it did not make', async () => {
    const pages = new ScorePages(3, false);
    expect(await pages.page(undefined, 10, async () => [])).toEqual({ items: [], cursor: null });
    await expect(pages.page('not-a-cursor', 10, async () => [])).rejects.toThrow(QueueInputError);
    const other = await new ScorePages(2, false).page(undefined, 1, async (shard) => [
      { shard, member: 'a', score: 1 },
    ]);
    await expect(pages.page(other.cursor!, 10, async () => [])).rejects.toThrow(/not one this queue returned/);
  });
});
