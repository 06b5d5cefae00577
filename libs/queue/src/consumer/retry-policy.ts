/** How long to wait before the next attempt of a failed delivery. */
export interface Backoff {
  type: 'fixed' | 'exponential';
  /** The wait after the first failure (exponential: doubled after each one). */
  delayMs: number;
  /** Longest wait (exponential). */
  maxDelayMs: number;
}

/** Longest wait before a failed FixedQueue batch is delivered again. */
export const MAX_RETRY_DELAY_MS = 3_600_000;

/**
 * The attempts a delivery gets and the waits between them: one policy for every kind of consumer,
 * whichever words its options use (`maxAttempts` + `backoff` on a DelayQueue, `maxAttempts` +
 * `retryDelayMs` on an at-least-once FixedQueue, `retries` + `retryDelayMs` in an at-most-once consumer).
 */
export class RetryPolicy {
  constructor(
    readonly maxAttempts: number,
    private readonly backoff: Backoff,
  ) {}

  /** FixedQueue's words: `retryDelayMs` doubled after each failure, an hour at most. */
  static exponential(maxAttempts: number, delayMs: number): RetryPolicy {
    return new RetryPolicy(maxAttempts, { type: 'exponential', delayMs, maxDelayMs: MAX_RETRY_DELAY_MS });
  }

  /** Whether attempt `attempt` (from 1) was the last one. */
  exhausted(attempt: number): boolean {
    return attempt >= this.maxAttempts;
  }

  /** The wait after attempt `attempt` (from 1) failed, before the next one. */
  delayAfter(attempt: number): number {
    const { type, delayMs, maxDelayMs } = this.backoff;
    return type === 'fixed' ? delayMs : Math.min(maxDelayMs, delayMs * 2 ** (attempt - 1));
  }
}
