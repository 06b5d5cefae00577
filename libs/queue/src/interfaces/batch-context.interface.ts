export interface BatchContext {
  queue: string;
  /** The group every message of the batch belongs to. */
  group: string;
  /** Messages of this group discarded as older than `maxAgeMs` when this batch was claimed. */
  expired: number;
  /** Redis server time of the claim, epoch ms. */
  claimedAt: number;
  /**
   * Delivery number, from 1. At-least-once: greater when these messages were delivered before (the
   * handler threw, or its lease ran out). At-most-once: the in-process attempt (`maxAttempts`).
   */
  attempt: number;
  /**
   * Aborted when this delivery's lease was lost (another consumer may get the batch) or the shutdown
   * timeout ran out: stop work you no longer own.
   */
  signal: AbortSignal;
}
