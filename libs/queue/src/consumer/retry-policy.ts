/** How long to wait before the next attempt of a failed delivery. */
export interface Backoff {
  type: 'fixed' | 'exponential';
  /** The wait after the first failure (exponential: doubled after each one). */
  delayMs: number;
  /** Longest wait (exponential). */
  maxDelayMs: number;
}

/**
 * The attempts a delivery gets and the waits between them: one policy for every kind of consumer, in the
 * words of every retry's options (`maxAttempts` + `backoff`: both queues, `@BatchConsumer`, `@Recurring`).
 */
export class RetryPolicy {
  constructor(
    readonly maxAttempts: number,
    private readonly backoff: Backoff,
  ) {}

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
