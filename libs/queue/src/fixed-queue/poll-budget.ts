/**
 * Bounds on what one poll of a FixedQueue shard asks of Redis, whatever `concurrency` and `batchSize`
 * allow: Redis runs a MULTI whole, blocking every other client meanwhile, and reading the entries is
 * most of a poll's cost. A consumer with more free slots than one poll fills polls again at once
 * (the shard stays due), so it makes several short calls instead of one long one.
 */
export const GROUPS_PER_POLL = 32;
/** Entries one poll reads, unless a single batch of small messages is larger (batchSize ≤ 10,000). */
export const ENTRIES_PER_POLL = 4096;
/** Bytes one poll reads, about: entry sizes are only known once read, so they are estimated from the last reads. */
export const BYTES_PER_POLL = 1 << 20;
/** Entry size assumed before the first read, at most: small enough for a batch of small messages to be read whole. */
const FIRST_ENTRY_BYTES = 256;

export interface PollPlan {
  /** Most batches (and groups) this poll claims: the claim script's limit. */
  batches: number;
  /** Entries read per batch: batchSize, unless one batch alone is over the poll's entries or bytes. */
  perBatch: number;
}

/**
 * Plans each poll from the entries the previous polls read. The estimate follows a rise at once (a
 * poll of large messages after small ones reads too much only once) and a fall over a few polls.
 */
export class PollBudget {
  private entryBytes: number;
  private observed = false;

  constructor(private readonly batchSize: number) {
    this.entryBytes = Math.min(FIRST_ENTRY_BYTES, BYTES_PER_POLL / batchSize);
  }

  /** Whether entry sizes were seen yet: before, a caller may read one entry first rather than plan blind. */
  get learned(): boolean {
    return this.observed;
  }

  /** The plan of a poll with `limit` free slots. */
  plan(limit: number): PollPlan {
    const byBytes = Math.floor(BYTES_PER_POLL / this.entryBytes);
    const entries = Math.max(1, Math.min(Math.max(ENTRIES_PER_POLL, this.batchSize), byBytes));
    const perBatch = Math.min(this.batchSize, entries);
    const batches = Math.max(1, Math.min(limit, GROUPS_PER_POLL, Math.floor(entries / perBatch)));
    return { batches, perBatch };
  }

  /** Learns entry sizes from what a poll read. */
  observe(lists: string[][]): void {
    let count = 0;
    let chars = 0;
    for (const list of lists) {
      count += list.length;
      for (const entry of list) chars += entry.length;
    }
    if (count === 0) return;
    this.entryBytes = this.observed ? Math.max(1, chars / count, this.entryBytes / 2) : Math.max(1, chars / count);
    this.observed = true;
  }
}
