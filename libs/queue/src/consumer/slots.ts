/** Counts handlers in flight against a concurrency limit; waiters are served in order. */
export class Slots {
  private used = 0;
  private closed = false;
  private readonly waiters: (() => void)[] = [];
  private readonly idleWaiters: (() => void)[] = [];

  constructor(readonly size: number) {}

  get inFlight(): number {
    return this.used;
  }

  /**
   * Waits until a slot is free, then reserves up to `max` free ones (so pollers of several shards never
   * claim more work than the limit between them). Hand each to `run`, and the unused back to `release`.
   * Returns 0 only once `close()` was called.
   */
  async acquire(max: number): Promise<number> {
    // A woken waiter may find the slot taken by a caller that did not have to wait: wait again.
    while (!this.closed && this.used >= this.size) await new Promise<void>((resolve) => this.waiters.push(resolve));
    if (this.closed) return 0;
    const count = Math.min(max, this.size - this.used);
    this.used += count;
    return count;
  }

  /** Makes every waiting and future `acquire` return 0 at once: used when stopping. */
  close(): void {
    this.closed = true;
    for (const resolve of this.waiters.splice(0)) resolve();
  }

  /** Runs `work` in a reserved slot, released however it ends. */
  run(work: () => Promise<unknown>): void {
    void work().finally(() => this.release(1));
  }

  release(count: number): void {
    if (count <= 0) return;
    this.used -= count;
    if (this.used < this.size) this.waiters.shift()?.();
    if (this.used === 0) for (const resolve of this.idleWaiters.splice(0)) resolve();
  }

  /** Resolves once nothing is in flight. */
  whenIdle(): Promise<void> {
    if (this.used === 0) return Promise.resolve();
    return new Promise((resolve) => this.idleWaiters.push(resolve));
  }
}
