import type { RepeatOccurrence } from './repeat.interface';

export interface DelayContext {
  queue: string;
  id: string;
  /** Delivery number, from 1. */
  attempt: number;
  /** When this delivery was due, epoch ms. */
  runAt: number;
  /** Redis server time at which it was claimed, epoch ms (`firedAt - runAt` is its lateness). */
  firedAt: number;
  /**
   * Aborted when this delivery's lease was lost (the task was rescheduled, cancelled, or went to another
   * worker) or the shutdown timeout ran out: stop work you no longer own.
   */
  signal: AbortSignal;
  /** Set when the task is an occurrence of a repeat (`DelayQueue.repeat`). */
  repeat?: RepeatOccurrence;
}
