import { randomFillSync } from 'node:crypto';

const TOKEN_BYTES = 9;
/** Random bytes drawn a thousand tokens at a time: one call per token cost a claim more than its script. */
const pool = Buffer.alloc(TOKEN_BYTES * 1024);
let used = pool.length;

/**
 * A fresh fencing token: tells one delivery from every other the item ever had, so a late call from
 * a worker whose lease ran out is refused. Random rather than a counter in Redis, which would start
 * again after data loss (FLUSHDB, a restart without persistence, a failover to a replica that lagged)
 * and hand out the tokens of deliveries still running. 72 bits: a repeat is out of reach (2^36
 * tokens for an even chance of any two alike). base64url, so it never holds the ':' that separates
 * the fields stored around it.
 */
export function fencingToken(): string {
  if (used === pool.length) {
    randomFillSync(pool);
    used = 0;
  }
  used += TOKEN_BYTES;
  return pool.toString('base64url', used - TOKEN_BYTES, used);
}
