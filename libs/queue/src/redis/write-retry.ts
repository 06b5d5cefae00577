import { QueueConnectionError, type QueueCallOutcome } from '../errors';
import { LateTry } from './call-keys';
import { lateCall, retriesRanOut } from './redis.messages';
import type { HeldWrites } from './redis-connection';

/** Pause before the second try; doubled for each further one, up to MAX_PAUSE_MS. */
const FIRST_PAUSE_MS = 50;
/**
 * Longest pause between tries: a Redis that comes back is used within about this much, and a Redis that
 * stays away costs about one failed call per this much per retrying call.
 */
const MAX_PAUSE_MS = 1000;

/**
 * Bounded retry of the calls that are safe to repeat (`retryMs`). Tries again after a QueueConnectionError
 * only (anything else is an answer), until a try succeeds or `retryMs` ms have passed since the call; a
 * try under way when the budget runs out is awaited (it is bounded by `commandTimeoutMs`). A try Redis
 * refused as late (`LateTry`) ends them too: the call's deadline has passed for every later one. The last
 * error's outcome is `unknown` when any try may have reached Redis, and it says how many tries were made.
 * Held like a write: shutdown awaits the calls retrying, then ends their pauses (no try starts after it).
 */
export class WriteRetries implements HeldWrites {
  private closed = false;
  private readonly retrying = new Set<Promise<unknown>>();
  private readonly pauses = new Set<() => void>();

  // Not async: a call without retries (the usual one) costs no promise of its own, and one with retries
  // enters the retry loop only once its first try failed (a retried push is a hot path too).
  run<R>(call: string, retryMs: number, attempt: () => Promise<R>): Promise<R> {
    if (retryMs <= 0) return attempt();
    const start = Date.now();
    const retrying = attempt().catch((error: unknown) => this.retry(call, retryMs, attempt, start, error));
    this.retrying.add(retrying);
    void retrying.then(
      () => this.retrying.delete(retrying),
      () => this.retrying.delete(retrying),
    );
    return retrying;
  }

  async drain(): Promise<void> {
    await Promise.allSettled([...this.retrying]);
  }

  close(): void {
    this.closed = true;
    for (const end of this.pauses) end();
  }

  /** After the first try failed with `failure`. */
  private async retry<R>(
    call: string,
    retryMs: number,
    attempt: () => Promise<R>,
    start: number,
    failure: unknown,
  ): Promise<R> {
    let outcome: QueueCallOutcome = 'not-sent';
    let pauseMs = FIRST_PAUSE_MS;
    let error = failure;
    for (let tries = 1; ; tries++) {
      if (!(error instanceof QueueConnectionError)) throw error;
      if (error instanceof LateTry) throw lateCall(call, error, tries, Date.now() - start, retryMs);
      if (error.outcome === 'unknown') outcome = 'unknown';
      const leftMs = start + retryMs - Date.now();
      if (leftMs <= 0 || this.closed) throw retriesRanOut(call, error, outcome, tries, Date.now() - start, retryMs);
      await this.pause(Math.min(pauseMs, leftMs));
      pauseMs = Math.min(MAX_PAUSE_MS, pauseMs * 2);
      try {
        return await attempt();
      } catch (next) {
        error = next;
      }
    }
  }

  private pause(ms: number): Promise<void> {
    return new Promise((resolve) => {
      const end = () => {
        clearTimeout(timer);
        this.pauses.delete(end);
        resolve();
      };
      const timer = setTimeout(end, ms);
      this.pauses.add(end);
    });
  }
}
