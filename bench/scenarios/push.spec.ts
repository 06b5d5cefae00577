import { zipfSequence } from './push';

describe('zipfSequence', () => {
  it('draws the same groups every time, within range, the most popular first by far', () => {
    const drawn = zipfSequence(50_000, 10_000, 1.1);
    expect(zipfSequence(50_000, 10_000, 1.1)).toEqual(drawn);
    expect(Math.min(...drawn)).toBeGreaterThanOrEqual(0);
    expect(Math.max(...drawn)).toBeLessThan(10_000);
    const counts = new Map<number, number>();
    for (const group of drawn) counts.set(group, (counts.get(group) ?? 0) + 1);
    // Weight 1 / (k + 1)^1.1: the first group about 2^1.1 ≈ 2.1 times the second, and far ahead of the 100th.
    const ratio = counts.get(0)! / counts.get(1)!;
    expect(ratio).toBeGreaterThan(1.7);
    expect(ratio).toBeLessThan(2.6);
    expect(counts.get(0)!).toBeGreaterThan(50 * (counts.get(99) ?? 0));
  });
});
