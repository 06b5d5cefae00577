/**
 * Counts handlers in flight against a concurrency limit; waiters are served in order. A handler may give
 * its slot up before it ends (one past its deadline): it no longer counts against the limit, but is
 * still waited for by `whenIdle`.
 */
export class Slots {
  private used = 0;
  /** Work handed to `run` and not settled yet, in a slot or past giving it up. */
  private working = 0;
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

  /**
   * Runs `work` in a reserved slot, released when `work` calls the `free` it is given or else when it
   * ends. `work` must not reject: it reports its own failures, since a rejection here has no one to go to.
   */
  run(work: (free: () => void) => Promise<unknown>): void {
    this.working++;
    let held = true;
    const free = () => {
      if (!held) return;
      held = false;
      this.release(1);
    };
    void work(free).finally(() => {
      this.working--;
      free();
      this.idleCheck();
    });
  }

  release(count: number): void {
    if (count <= 0) return;
    this.used -= count;
    if (this.used < this.size) this.waiters.shift()?.();
    this.idleCheck();
  }

  /** Resolves once nothing is in flight, work that gave its slot up included. */
  whenIdle(): Promise<void> {
    if (this.used === 0 && this.working === 0) return Promise.resolve();
    return new Promise((resolve) => this.idleWaiters.push(resolve));
  }

  private idleCheck(): void {
    if (this.used === 0 && this.working === 0) for (const resolve of this.idleWaiters.splice(0)) resolve();
  }
}
