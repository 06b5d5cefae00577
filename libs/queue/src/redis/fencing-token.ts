import { randomBytes } from 'node:crypto';

/**
 * A fresh fencing token: tells one delivery from every other the item ever had, so a late call from
 * a worker whose lease ran out is refused. Random rather than a counter in Redis, which would start
 * again after data loss (FLUSHDB, a restart without persistence, a failover to a replica that lagged)
 * and hand out the tokens of deliveries still running. 72 bits: a repeat is out of reach (2^36
 * tokens for an even chance of any two alike). base64url, so it never holds the ':' that separates
 * the fields stored around it.
 */
export function fencingToken(): string {
  return randomBytes(9).toString('base64url');
}
