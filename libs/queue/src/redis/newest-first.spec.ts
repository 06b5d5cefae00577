import { readNewestFirst } from './newest-first';

/** A sorted set of items by death time, read as the dead-letter scripts read it. */
function deadSet(times: number[]) {
  const items = times.map((diedAt, i) => ({ id: `t${i}`, diedAt })).sort((a, b) => b.diedAt - a.diedAt);
  const calls: number[] = [];
  const read = async (count: number, latest: string, listedAtLatest: number) => {
    calls.push(count);
    const from = items.filter((item) => latest === '+inf' || item.diedAt <= Number(latest));
    const page = from.slice(listedAtLatest, listedAtLatest + count);
    return { items: page, listed: page.length };
  };
  return { items, calls, read };
}

describe('readNewestFirst', () => {
  it('reads newest first in calls of at most perCall, none twice or missed where a call ends among equal times', async () => {
    // 7 items died in each of three milliseconds: calls of 5 end inside a millisecond.
    const { items, calls, read } = deadSet(Array.from({ length: 21 }, (_, i) => 1000 + Math.floor(i / 7)));
    const listed = await readNewestFirst(100, 5, read);
    expect(listed.map((item) => item.id)).toEqual(items.map((item) => item.id));
    expect(Math.max(...calls)).toBe(5);
  });

  it('stops at the limit, and at the end of the set', async () => {
    const { items, read } = deadSet([5, 4, 3, 2, 1]);
    expect(await readNewestFirst(3, 2, read)).toEqual(items.slice(0, 3));
    expect(await readNewestFirst(10, 2, deadSet([1, 2]).read)).toHaveLength(2);
    expect(await readNewestFirst(10, 2, deadSet([]).read)).toEqual([]);
  });
});
