import { byShard } from '../utils/by-shard';

/** A delivery a consumer is handling: its shard, and the signal its handler was given. */
export interface RunningDelivery {
  shard: number;
  controller: AbortController;
}

/**
 * The deliveries a consumer is handling, with the heartbeat that extends their leases: one timer for
 * the consumer, not one per delivery, beating at a third of the lease (two missed beats still leave it
 * alive), one call per shard. It runs while any delivery does, and not at all without `extend` (no
 * leases: an unordered FixedQueue). A delivery whose lease was lost (`extend` answers false for it) has
 * its signal aborted: another consumer may have it now.
 */
export class RunningDeliveries<D extends RunningDelivery> {
  private readonly running = new Set<D>();
  private timer?: NodeJS.Timeout;

  constructor(
    private readonly leaseMs: number,
    private readonly extend: ((shard: number, deliveries: D[]) => Promise<boolean[]>) | undefined,
    private readonly lost: (delivery: D) => void,
    private readonly failed: (error: unknown, count: number) => void,
  ) {}

  add(delivery: D): void {
    this.running.add(delivery);
    if (this.extend)
      this.timer ??= setInterval(() => this.beat(this.extend!), Math.max(50, Math.floor(this.leaseMs / 3)));
  }

  delete(delivery: D): void {
    this.running.delete(delivery);
    if (this.running.size === 0) this.stop();
  }

  /** Stops the heartbeat (shutdown gives the deliveries back); the deliveries stay listed. */
  stop(): void {
    clearInterval(this.timer);
    this.timer = undefined;
  }

  [Symbol.iterator](): Iterator<D> {
    return this.running[Symbol.iterator]();
  }

  private beat(extend: (shard: number, deliveries: D[]) => Promise<boolean[]>): void {
    for (const [shard, deliveries] of byShard(this.running)) {
      extend(shard, deliveries).then(
        (kept) =>
          kept.forEach((held, i) => {
            if (held) return;
            deliveries[i].controller.abort(new Error('lease lost'));
            this.lost(deliveries[i]);
          }),
        (error) => this.failed(error, deliveries.length),
      );
    }
  }
}
