export interface ClaimedBatch {
  group: string;
  expired: number;
  messages: unknown[];
  /** Ordered queues: the delivery's fencing token (it holds the group until acknowledged). */
  token?: string;
  /** Ordered queues: delivery number of these messages, from 1. */
  attempt: number;
  /** Trace contexts the messages were pushed with (traced queues), each once. */
  carriers?: string[];
}

/** What a claim answers, ordered or not (see includes/claim-reply.lua). */
export interface ClaimReply {
  serverNow: number;
  /** Next due time of the shard (server ms): `serverNow` when some group is due already, Infinity when empty. */
  nextDueAt: number;
  /** Groups due now: the candidates of the next call. */
  due: string[];
  batches: ClaimedBatch[];
  /** Groups this claim paused (onExhausted 'pause-group'): the lease of their last attempt had run out. */
  paused?: string[];
}

/** A claim's outcome, with the entries it read (their sizes plan the next poll). */
export interface Claimed {
  outcome: ClaimReply;
  lists: string[][];
}

/**
 * The head of a claim reply (see includes/claim-reply.lua): `{now, next due or -1, count, group...}`; the
 * script's values per candidate follow it, from `claimsAt`.
 */
export function decodeClaimHead(reply: (string | number)[]): { outcome: ClaimReply; claimsAt: number } {
  const claimsAt = 3 + (reply[2] as number);
  return {
    outcome: {
      serverNow: reply[0] as number,
      nextDueAt: reply[1] === -1 ? Infinity : (reply[1] as number),
      due: reply.slice(3, claimsAt) as string[],
      batches: [],
    },
    claimsAt,
  };
}
