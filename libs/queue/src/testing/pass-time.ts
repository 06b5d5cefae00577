import { setTimeout as delay } from 'node:timers/promises';
import type { QueueClock } from '../queue-clock';

/** Options of `passTime`. */
export interface PassTimeOptions {
  /**
   * On a Redis server: real time waited past `ms`, for the work that fell due to be claimed and its
   * handlers to start (then they are waited for). Default 250 ms, for a Redis on the test's machine.
   */
  marginMs?: number;
  /**
   * How long (real time) handlers may take to settle: each step of `advance` on `memory://`, the wait
   * after the margin on Redis; then it rejects, naming them. Default 30 s.
   */
  settleTimeoutMs?: number;
}

/**
 * Lets `ms` of the queues' time pass, so that one spec runs on `memory://` and on a Redis server: on
 * `memory://` it is `clock.advance(ms)` (instant, every due time stepped through, handlers settled);
 * on Redis it waits `ms` of real time plus `marginMs`, then for this process' handlers to settle. On
 * Redis, keep the times short (they pass for real), and within `idlePollMs` of when the work was
 * written, so that a consumer is woken for it rather than finding it at its next idle poll.
 */
export async function passTime(clock: QueueClock, ms: number, options: PassTimeOptions = {}): Promise<void> {
  const settleTimeoutMs = options.settleTimeoutMs ?? 30_000;
  if (clock.onMemory) return clock.advance(ms, { settleTimeoutMs });
  // advance's own checks of `ms`, which reject on Redis: a bad number is refused alike on both.
  if (typeof ms !== 'number' || !Number.isSafeInteger(ms) || ms < 0) return clock.advance(ms);
  await delay(ms + (options.marginMs ?? 250));
  await clock.idle(settleTimeoutMs);
}
