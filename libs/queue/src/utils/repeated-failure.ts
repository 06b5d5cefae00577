/** What a `RepeatedFailure` writes, each line built by its owner (who knows what failed). */
export interface RepeatedFailureLog {
  /** The first failure of a run, in full. */
  first(error: string): void;
  /** Failures since the last line: `count` of them, the run going on for `sinceMs`, `last` the latest. */
  summary(count: number, sinceMs: number, last: string): void;
  /** The run is over: `count` failures in all over `sinceMs`. */
  recovered(count: number, sinceMs: number): void;
}

/** How often a run of failures is summed up (the first failure and the recovery are logged at once). */
export const SUMMARY_EVERY_MS = 10_000;

/**
 * Logs a run of repeated failures (a reconnecting client, a poll retrying while Redis is down) without
 * flooding: the first in full, then at most one summary with a count every `everyMs`, then the
 * recovery. A failure that repeats every 50 ms must not write thousands of identical lines.
 */
export class RepeatedFailure {
  private failing = false;
  private since = 0;
  private lastLine = 0;
  private count = 0;
  private unlogged = 0;

  constructor(
    private readonly log: RepeatedFailureLog,
    private readonly everyMs = SUMMARY_EVERY_MS,
    private readonly now: () => number = Date.now,
  ) {}

  get isFailing(): boolean {
    return this.failing;
  }

  failed(error: string): void {
    const now = this.now();
    if (!this.failing) {
      this.failing = true;
      this.since = this.lastLine = now;
      this.count = 1;
      this.unlogged = 0;
      this.log.first(error);
      return;
    }
    this.count++;
    this.unlogged++;
    if (now - this.lastLine < this.everyMs) return;
    this.log.summary(this.unlogged, now - this.since, error);
    this.lastLine = now;
    this.unlogged = 0;
  }

  succeeded(): void {
    if (!this.failing) return;
    this.failing = false;
    this.log.recovered(this.count, this.now() - this.since);
  }
}
