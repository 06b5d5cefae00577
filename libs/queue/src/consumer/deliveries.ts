import { HandlerTimeoutError } from '../errors';
import { byShard } from '../utils/by-shard';
import { handlerTimedOut, leaseLostError } from './consumer.messages';

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

/** What every handler's context shares, whatever its kind: its signal, made when first asked for. */
export abstract class HandlerContext {
  protected constructor(private readonly aborter: LazyAbort) {}

  get signal(): AbortSignal {
    return this.aborter.signal;
  }
}

/** A delivery a consumer is handling: its shard, and what aborts its handler's signal. */
export interface RunningDelivery {
  readonly shard: number;
  readonly aborter: LazyAbort;
  /** How log lines and errors name it: `batch of group "g"`, `task "t"`. */
  readonly what: string;
  /** What it holds, for log lines, events and health: its group, or its task's id. */
  readonly subject: { group: string } | { id: string };
}

/** What `Deliveries.run` rejects with once shutdown gave the delivery up (`abandon`). */
export const ABANDONED: unique symbol = Symbol('abandoned at shutdown');

/** A delivery whose handler ran past `handlerTimeoutMs` and has not settled yet. */
export interface OverdueDelivery<D> {
  delivery: D;
  /** How long its handler has been running, and how long past its deadline. */
  runningMs: number;
  overdueMs: number;
}

export interface DeliveriesOptions<D extends RunningDelivery> {
  leaseMs: number;
  /** Extends the leases of a shard's deliveries; absent when deliveries hold no lease (unordered FixedQueue). */
  extend?: (shard: number, deliveries: D[]) => Promise<boolean[]>;
  /** A lease was lost (another consumer may have the delivery now); its signal is already aborted. */
  lost(delivery: D): void;
  extendFailed(error: unknown, count: number): void;
  handlerTimeoutMs: number;
  /** A handler ran past `handlerTimeoutMs`: its signal is aborted and its slot freed; it is still held. */
  overdue(delivery: D): void;
  /** An overdue handler settled, `overdueMs` past its deadline: its outcome is recorded now. */
  settledLate(delivery: D, overdueMs: number): void;
}

/** One running delivery: when it started, when it went past its deadline, and what ends its run early. */
interface Run {
  startedAt: number;
  overdueAt?: number;
  abandon(): void;
  /** Gives up the slot it holds (past its deadline). */
  free?: () => void;
}

/**
 * The deliveries a consumer is handling. Each runs under a deadline (`handlerTimeoutMs`): one that
 * does not settle in time has its signal aborted with a HandlerTimeoutError and gives up its slot, so
 * that the consumer's other work goes on, but it stays held: its lease is extended for as long as its
 * handler runs, so that its group, batch or task is never handed to anyone else beside it, and its
 * outcome counts when it settles. Only shutdown (`abandon`) or the death of the process lets go of it.
 * Leases are kept by one heartbeat for the consumer, not one per delivery, beating at a third of the
 * lease (two missed beats still leave it alive), one call per shard, and only while deliveries run. A
 * delivery whose lease was lost has its signal aborted; its handler may finish. Deadlines are kept by
 * one timer too, armed for the oldest delivery not yet overdue: the runs are kept in the order they
 * started, which, all having the same timeout, is the order their deadlines fall in.
 */
export class Deliveries<D extends RunningDelivery> {
  private readonly running = new Map<D, Run>();
  private timer?: NodeJS.Timeout;
  private deadlines?: NodeJS.Timeout;
  private timeouts = 0;
  private late = 0;

  constructor(private readonly options: DeliveriesOptions<D>) {}

  get size(): number {
    return this.running.size;
  }

  /** The deliveries running now. */
  current(): IterableIterator<D> {
    return this.running.keys();
  }

  /** Handlers that ran past `handlerTimeoutMs` since the consumer started. */
  get timedOut(): number {
    return this.timeouts;
  }

  /** Handlers past `handlerTimeoutMs` still running. */
  get overdueCount(): number {
    return this.late;
  }

  /** The deliveries whose handlers run past their deadline, longest overdue first. */
  overdue(now = Date.now()): OverdueDelivery<D>[] {
    const found: OverdueDelivery<D>[] = [];
    for (const [delivery, { startedAt, overdueAt }] of this.running)
      if (overdueAt !== undefined) found.push({ delivery, runningMs: now - startedAt, overdueMs: now - overdueAt });
    return found.sort((a, b) => b.overdueMs - a.overdueMs);
  }

  /**
   * Runs `handle` as `delivery`'s handler. Resolves with its value and rejects with what it threw,
   * whenever it settles, or with ABANDONED once `abandon` gave it up. Past `handlerTimeoutMs` its signal
   * aborts with a HandlerTimeoutError and `free` is called: the slot it held is given up, the delivery
   * is not.
   */
  run<R>(delivery: D, handle: () => R | Promise<R>, free?: () => void): Promise<R> {
    return new Promise<R>((resolve, reject) => {
      const run: Run = { startedAt: Date.now(), abandon: () => finish(() => reject(ABANDONED)), free };
      const finish = (settle: () => void) => {
        if (!this.running.delete(delivery)) return;
        if (run.overdueAt !== undefined) {
          this.late--;
          this.options.settledLate(delivery, Date.now() - run.overdueAt);
        }
        if (this.running.size === 0) this.stopTimers();
        settle();
      };
      this.running.set(delivery, run);
      this.deadlines ??= this.armDeadlines();
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
   * Shutdown ran out of time: every running delivery's signal aborts with `reason` (overdue ones keep
   * their HandlerTimeoutError) and its run rejects with ABANDONED now, whatever its handler does.
   * Returns them, to be given back.
   */
  abandon(reason: Error): D[] {
    const abandoned = [...this.running.keys()];
    for (const delivery of abandoned) {
      delivery.aborter.abort(reason);
      this.running.get(delivery)?.abandon();
    }
    return abandoned;
  }

  private stopTimers(): void {
    clearInterval(this.timer);
    this.timer = undefined;
    clearTimeout(this.deadlines);
    this.deadlines = undefined;
  }

  /** A timer for the earliest deadline of a delivery not yet overdue, if any runs. */
  private armDeadlines(): NodeJS.Timeout | undefined {
    for (const run of this.running.values()) {
      if (run.overdueAt !== undefined) continue;
      const wait = run.startedAt + this.options.handlerTimeoutMs - Date.now();
      return setTimeout(() => this.sweep(), Math.max(0, wait));
    }
    return undefined;
  }

  /**
   * Marks the deliveries past their deadline overdue: each signal aborts with a HandlerTimeoutError and
   * each slot frees; the deliveries stay held.
   */
  private sweep(): void {
    const now = Date.now();
    const { handlerTimeoutMs } = this.options;
    for (const [delivery, run] of this.running) {
      if (run.overdueAt !== undefined) continue;
      if (run.startedAt + handlerTimeoutMs > now) break;
      this.timeouts++;
      this.late++;
      run.overdueAt = now;
      delivery.aborter.abort(handlerTimedOut(handlerTimeoutMs, delivery.what));
      this.options.overdue(delivery);
      run.free?.();
    }
    this.deadlines = this.armDeadlines();
  }

  private beat(extend: (shard: number, deliveries: D[]) => Promise<boolean[]>): void {
    for (const [shard, deliveries] of byShard(this.running.keys())) {
      extend(shard, deliveries).then(
        (kept) =>
          kept.forEach((held, i) => {
            if (held || deliveries[i].aborter.aborted) return;
            deliveries[i].aborter.abort(leaseLostError());
            this.options.lost(deliveries[i]);
          }),
        (error) => this.options.extendFailed(error, deliveries.length),
      );
    }
  }
}

/** Whether `delivery`'s handler ran past its deadline (its signal aborted with its HandlerTimeoutError). */
export function overdue(delivery: RunningDelivery): boolean {
  return delivery.aborter.reason instanceof HandlerTimeoutError;
}

/**
 * Whether the delivery is no longer this consumer's to settle: its signal aborted for another reason
 * than its deadline (its lease was lost: another consumer may have it now).
 */
export function leaseLost(delivery: RunningDelivery): boolean {
  return delivery.aborter.aborted && !overdue(delivery);
}
