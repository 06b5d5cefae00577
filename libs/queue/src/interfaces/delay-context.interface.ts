export interface DelayContext {
  queue: string;
  id: string;
  /** Delivery number, from 1. */
  attempt: number;
  /** When this delivery was due, epoch ms. */
  runAt: number;
  /** Redis server time at which it was claimed, epoch ms (`firedAt - runAt` is its lateness). */
  firedAt: number;
}
