import { RetryPolicy } from './retry-policy';

describe('RetryPolicy', () => {
  it('doubles an exponential wait after each failure, up to its cap', () => {
    const policy = new RetryPolicy(10, { type: 'exponential', delayMs: 100, maxDelayMs: 500 });
    expect([1, 2, 3, 4, 5].map((attempt) => policy.delayAfter(attempt))).toEqual([100, 200, 400, 500, 500]);
  });

  it('waits the same after every failure when fixed', () => {
    const policy = new RetryPolicy(3, { type: 'fixed', delayMs: 250, maxDelayMs: 1 });
    expect([1, 2, 3].map((attempt) => policy.delayAfter(attempt))).toEqual([250, 250, 250]);
  });

  it('is exhausted from its last attempt on', () => {
    const policy = new RetryPolicy(3, { type: 'exponential', delayMs: 10, maxDelayMs: 100 });
    expect([1, 2, 3, 4].map((attempt) => policy.exhausted(attempt))).toEqual([false, false, true, true]);
  });
});
