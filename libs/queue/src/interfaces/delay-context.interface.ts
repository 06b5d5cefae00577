import type { RepeatOccurrence } from './repeat.interface';

export interface DelayContext {
  queue: string;
  id: string;
  /** Delivery number, from 1. */
  attempt: number;
  /**
   * When the task was due, epoch ms: its scheduled time (after a failed attempt, the retry's time after its
   * backoff). A delivery again after a lease ran out (the worker died or hung) or after a give-back at
   * shutdown keeps the time the lost delivery was due, so `firedAt - dueAt` is how late the work really is.
   */
  dueAt: number;
  /**
   * When this delivery became due, epoch ms: `dueAt`, except for a delivery again after a lease ran out or a
   * give-back, where it is when that happened (the lease's end).
   */
  runAt: number;
  /** Redis server time at which it was claimed, epoch ms (`firedAt - dueAt` is its lateness). */
  firedAt: number;
  /**
   * Aborted when this delivery's lease was lost (the task was rescheduled, cancelled, or went to another
   * worker) or the shutdown timeout ran out: stop work you no longer own.
   */
  signal: AbortSignal;
  /** Set when the task is an occurrence of a repeat (`DelayQueue.repeat`). */
  repeat?: RepeatOccurrence;
}
