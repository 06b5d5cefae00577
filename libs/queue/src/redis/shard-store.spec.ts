import { inChunks } from './shard-store';

describe('inChunks', () => {
  it('runs slices of at most `size` and joins their results in order', async () => {
    const sizes: number[] = [];
    const result = await inChunks([1, 2, 3, 4, 5], 2, async (chunk) => {
      sizes.push(chunk.length);
      return chunk.map((n) => n * 10);
    });
    expect(sizes).toEqual([2, 2, 1]);
    expect(result).toEqual([10, 20, 30, 40, 50]);
  });

  it('makes one call for no items', async () => {
    const run = jest.fn(async (chunk: number[]) => chunk);
    expect(await inChunks([], 2, run)).toEqual([]);
    expect(run).toHaveBeenCalledTimes(1);
  });
});
