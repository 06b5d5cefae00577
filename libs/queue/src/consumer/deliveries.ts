import { HandlerTimeoutError } from '../errors';
import { byShard } from '../utils/by-shard';

/**
 * An AbortController made only when a handler asks for its signal: most never do, and making one for
 * every delivery was a measurable part of a small delivery's cost.
 */
export class LazyAbort {
  private controller?: AbortController;
  private done = false;
  private why: unknown;

  get signal(): AbortSignal {
    if (!this.controller) {
      this.controller = new AbortController();
      if (this.done) this.controller.abort(this.why);
    }
    return this.controller.signal;
  }

  get aborted(): boolean {
    return this.done;
  }

  get reason(): unknown {
    return this.why;
  }

  abort(reason: unknown): void {
    if (this.done) return;
    this.done = true;
    this.why = reason;
    this.controller?.abort(reason);
  }
}

/** A delivery a consumer is handling: its shard, and what aborts its handler's signal. */
export interface RunningDelivery {
  readonly shard: number;
  readonly aborter: LazyAbort;
  /** How log lines and errors name it: `batch of group "g"`, `task "t"`. */
  readonly what: string;
}

/** What `Deliveries.run` rejects with once shutdown gave the delivery up (`abandon`). */
export const ABANDONED: unique symbol = Symbol('abandoned at shutdown');

export interface DeliveriesOptions<D extends RunningDelivery> {
  leaseMs: number;
  /** Extends the leases of a shard's deliveries; absent when deliveries hold no lease (unordered FixedQueue). */
  extend?: (shard: number, deliveries: D[]) => Promise<boolean[]>;
  /** A lease was lost (another consumer may have the delivery now); its signal is already aborted. */
  lost(delivery: D): void;
  extendFailed(error: unknown, count: number): void;
  handlerTimeoutMs: number;
}

/**
 * The deliveries a consumer is handling. Each runs under a deadline (`handlerTimeoutMs`): one that
 * does not settle in time has its signal aborted with a HandlerTimeoutError and stops counting as
 * running, so its lease is no longer extended and its slot frees; what its handler does later is not
 * waited for. Leases are kept by one heartbeat for the consumer, not one per delivery, beating at a
 * third of the lease (two missed beats still leave it alive), one call per shard, and only while
 * deliveries run. A delivery whose lease was lost has its signal aborted; its handler may finish.
 */
export class Deliveries<D extends RunningDelivery> {
  /** Each running delivery, with what ends its run early (shutdown). */
  private readonly running = new Map<D, () => void>();
  private timer?: NodeJS.Timeout;
  private timeouts = 0;

  constructor(private readonly options: DeliveriesOptions<D>) {}

  get size(): number {
    return this.running.size;
  }

  /** Handlers abandoned for running past `handlerTimeoutMs` since the consumer started. */
  get timedOut(): number {
    return this.timeouts;
  }

  /**
   * Runs `handle` as `delivery`'s handler. Resolves with its value; rejects with what it threw, with a
   * HandlerTimeoutError once `handlerTimeoutMs` passed, or with ABANDONED once `abandon` gave it up.
   */
  run<R>(delivery: D, handle: () => R | Promise<R>): Promise<R> {
    return new Promise<R>((resolve, reject) => {
      const finish = (settle: () => void) => {
        if (!this.running.delete(delivery)) return;
        clearTimeout(deadline);
        if (this.running.size === 0) this.stopHeartbeat();
        settle();
      };
      const deadline = setTimeout(() => {
        const error = new HandlerTimeoutError(this.options.handlerTimeoutMs, delivery.what);
        this.timeouts++;
        delivery.aborter.abort(error);
        finish(() => reject(error));
      }, this.options.handlerTimeoutMs);
      this.running.set(delivery, () => finish(() => reject(ABANDONED)));
      const { extend, leaseMs } = this.options;
      if (extend) this.timer ??= setInterval(() => this.beat(extend), Math.max(50, Math.floor(leaseMs / 3)));
      let work: Promise<R>;
      try {
        work = Promise.resolve(handle());
      } catch (error) {
        work = Promise.reject(error);
      }
      work.then(
        (value) => finish(() => resolve(value)),
        (error: unknown) => finish(() => reject(error)),
      );
    });
  }

  /**
   * Shutdown ran out of time: every running delivery's signal aborts with `reason` and its run
   * rejects with ABANDONED now, whatever its handler does. Returns them, to be given back.
   */
  abandon(reason: Error): D[] {
    const abandoned = [...this.running.keys()];
    for (const delivery of abandoned) {
      delivery.aborter.abort(reason);
      this.running.get(delivery)?.();
    }
    return abandoned;
  }

  private stopHeartbeat(): void {
    clearInterval(this.timer);
    this.timer = undefined;
  }

  private beat(extend: (shard: number, deliveries: D[]) => Promise<boolean[]>): void {
    for (const [shard, deliveries] of byShard(this.running.keys())) {
      extend(shard, deliveries).then(
        (kept) =>
          kept.forEach((held, i) => {
            if (held || deliveries[i].aborter.aborted) return;
            deliveries[i].aborter.abort(new Error('lease lost'));
            this.options.lost(deliveries[i]);
          }),
        (error) => this.options.extendFailed(error, deliveries.length),
      );
    }
  }
}

/** Whether `error`, from `Deliveries.run`, is the deadline of that very delivery (not a handler's own throw). */
export function timedOut(error: unknown, delivery: RunningDelivery): error is HandlerTimeoutError {
  return error instanceof HandlerTimeoutError && delivery.aborter.reason === error;
}
