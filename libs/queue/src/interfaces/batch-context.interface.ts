export interface BatchContext {
  queue: string;
  /** The group every message of the batch belongs to. */
  group: string;
  /** Messages of this group discarded as older than `maxAgeMs` when this batch was claimed. */
  expired: number;
  /** Redis server time of the claim, epoch ms. */
  claimedAt: number;
  /** In-process attempt of this batch, from 1 (greater after a handler threw and `retries` allowed another). */
  attempt: number;
}
