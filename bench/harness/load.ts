import { setTimeout as sleep } from 'node:timers/promises';

export { sleep };

/**
 * Collects garbage left by the previous measurement when the process runs with --expose-gc (as
 * `npm run bench` does), so that its pauses are not charged to the next contender. A no-op otherwise.
 */
export function collectGarbage(): void {
  (globalThis as { gc?: () => void }).gc?.();
}

/** Monotonic milliseconds. */
export const now = (): number => performance.now();

/** Runs `task(i)` for every i below `total`, keeping `inFlight` of them running at once. */
export async function inParallel(
  total: number,
  inFlight: number,
  task: (i: number) => Promise<unknown>,
): Promise<void> {
  let next = 0;
  const worker = async () => {
    while (next < total) await task(next++);
  };
  await Promise.all(Array.from({ length: Math.min(inFlight, total) }, worker));
}

/** Node CPU time (user + system) spent since `since`, in ms. */
export function cpuMs(since: NodeJS.CpuUsage): number {
  const used = process.cpuUsage(since);
  return (used.user + used.system) / 1000;
}

/** Resolves with the monotonic time at which `total` items were counted; rejects when that takes too long. */
export class Countdown {
  private counted = 0;
  private resolve!: (at: number) => void;
  readonly done: Promise<number>;

  constructor(readonly total: number) {
    this.done = new Promise((resolve) => (this.resolve = resolve));
    if (total <= 0) this.resolve(now());
  }

  get count(): number {
    return this.counted;
  }

  add(n = 1): void {
    this.counted += n;
    if (this.counted >= this.total && this.counted - n < this.total) this.resolve(now());
  }

  async within(timeoutMs: number, what: string): Promise<number> {
    let timer: NodeJS.Timeout | undefined;
    const timeout = new Promise<never>((_, reject) => {
      timer = setTimeout(
        () => reject(new Error(`${what}: only ${this.counted} of ${this.total} after ${timeoutMs} ms`)),
        timeoutMs,
      );
    });
    try {
      return await Promise.race([this.done, timeout]);
    } finally {
      clearTimeout(timer);
    }
  }
}

/** Samples the process RSS while a measurement runs; `peakMB` is the highest seen. */
export class RssSampler {
  private peak = process.memoryUsage.rss();
  private readonly timer = setInterval(() => {
    this.peak = Math.max(this.peak, process.memoryUsage.rss());
  }, 50);

  stop(): number {
    clearInterval(this.timer);
    return Math.max(this.peak, process.memoryUsage.rss()) / 2 ** 20;
  }
}
