/** Counts handlers in flight against a concurrency limit; waiters are served in order. */
export class Slots {
  private used = 0;
  private readonly waiters: (() => void)[] = [];
  private readonly idleWaiters: (() => void)[] = [];

  constructor(readonly size: number) {}

  get inFlight(): number {
    return this.used;
  }

  /**
   * Waits until a slot is free, then reserves every free one (so pollers of several shards never claim
   * more work than the limit between them). Hand each to `run`, and the unused back to `release`.
   */
  async acquire(): Promise<number> {
    if (this.used >= this.size || this.waiters.length > 0) {
      await new Promise<void>((resolve) => this.waiters.push(resolve));
    }
    const count = Math.max(0, this.size - this.used);
    this.used += count;
    return count;
  }

  /** Lets every waiting `acquire` return at once (with whatever is free, maybe nothing): used when stopping. */
  wakeAll(): void {
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
