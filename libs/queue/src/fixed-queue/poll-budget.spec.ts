import { BYTES_PER_POLL, ENTRIES_PER_POLL, GROUPS_PER_POLL, PollBudget } from './poll-budget';

const entries = (count: number, bytes: number) => Array.from({ length: count }, () => 'x'.repeat(bytes));

describe('PollBudget', () => {
  it('claims at most a few dozen groups a poll, whatever the free slots', () => {
    expect(new PollBudget(128).plan(10_000)).toEqual({ batches: GROUPS_PER_POLL, perBatch: 128 });
    expect(new PollBudget(128).plan(3)).toEqual({ batches: 3, perBatch: 128 });
    expect(new PollBudget(128).plan(0)).toEqual({ batches: 1, perBatch: 128 });
  });

  it('reads whole batches of small messages, as many as the entries per poll allow', () => {
    expect(new PollBudget(1000).plan(100)).toEqual({ batches: 4, perBatch: 1000 });
    // A batch larger than a poll's entries is still read whole while its bytes allow.
    expect(new PollBudget(10_000).plan(100)).toEqual({ batches: 1, perBatch: 10_000 });
  });

  it('reads fewer entries once they turn out large, and more again as they shrink', () => {
    const budget = new PollBudget(4000);
    expect(budget.plan(64)).toEqual({ batches: 1, perBatch: 4000 });
    budget.observe([entries(4000, 1024)]);
    expect(budget.plan(64)).toEqual({ batches: 1, perBatch: BYTES_PER_POLL / 1024 });
    budget.observe([entries(10, 100)]);
    expect(budget.plan(64).perBatch).toBe(BYTES_PER_POLL / 512);
    for (let polls = 0; polls < 10; polls++) budget.observe([entries(10, 100)]);
    expect(budget.plan(64)).toEqual({ batches: 1, perBatch: 4000 });
  });

  it('keeps the entries of a poll within its bounds, whatever it learnt', () => {
    const budget = new PollBudget(128);
    budget.observe([entries(100, 1)]);
    const { batches, perBatch } = budget.plan(10_000);
    expect(batches * perBatch).toBeLessThanOrEqual(ENTRIES_PER_POLL);
    budget.observe([entries(1, 4 * BYTES_PER_POLL)]);
    expect(budget.plan(10_000)).toEqual({ batches: 1, perBatch: 1 });
  });

  it('learns nothing from a poll that read nothing', () => {
    const budget = new PollBudget(4000);
    budget.observe([[], []]);
    expect(budget.learned).toBe(false);
    expect(budget.plan(1)).toEqual({ batches: 1, perBatch: 4000 });
  });

  it('takes the first sizes it sees as they are, smaller than its first guess included', () => {
    const budget = new PollBudget(10_000);
    budget.observe([entries(1, 20)]);
    expect(budget.learned).toBe(true);
    expect(budget.plan(1)).toEqual({ batches: 1, perBatch: 10_000 });
  });
});
