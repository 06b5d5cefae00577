import { entryCarriers, entryMessages } from '../../redis/fixed-entry';
import { kindsOf, type ScriptProtocol } from '../../redis/script-protocol';

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

export interface TakeOutcome {
  serverNow: number;
  /** Next due time of the shard (server ms): `serverNow` when some group is due already, Infinity when empty. */
  nextDueAt: number;
  /** Groups due now: the candidates of the next call. */
  due: string[];
  batches: ClaimedBatch[];
}

/** A claim's outcome, with the entries it read (their sizes plan the next poll). */
export interface Claimed {
  outcome: TakeOutcome;
  lists: string[][];
}

export interface FixedTakeInput {
  batchSize: number;
  maxAgeMs: number;
  maxWaitMs: number;
  /** Most batches to claim, and groups to list. */
  limit: number;
  candidates: string[];
  /** Entries read of each candidate. */
  read: number;
  /** Messages as their JSON text. */
  raw: boolean;
  /** The consumer traces: read the messages' trace carriers too. */
  traced?: boolean;
}

/** The head of a claim reply (fixed-take, fixed-claim): `{now, next due or -1, count, group...}`, then per candidate `width` values. */
export function decodeClaimHead(reply: (string | number)[]): { outcome: TakeOutcome; claimsAt: number } {
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

/** Unordered claims (see fixed-take.lua): per candidate offset, expired, claimed, cut into batches of batchSize. */
export const fixedTake: ScriptProtocol<'fixed-take', FixedTakeInput, Claimed> = {
  script: 'fixed-take',
  keys: (shard, { candidates }) => [
    ...kindsOf(shard, ['ready', 'stats', 'lastPush']),
    ...candidates.map((group) => shard.group(group)),
  ],
  args: ({ batchSize, maxAgeMs, maxWaitMs, limit, candidates, read }) => [
    batchSize,
    maxAgeMs,
    maxWaitMs,
    limit,
    ...candidates.flatMap((group) => [group, read]),
  ],
  reads: (shard, { candidates, read }) => candidates.map((group) => ({ key: shard.group(group), count: read })),
  decode: (reply, { candidates, batchSize, raw, traced }, lists) => {
    const values = reply as (string | number)[];
    const { outcome, claimsAt } = decodeClaimHead(values);
    for (let i = 0; i < candidates.length; i++) {
      const at = claimsAt + 3 * i;
      const offset = values[at] as number;
      const expired = values[at + 1] as number;
      const end = offset + (values[at + 2] as number);
      const group = candidates[i];
      // Every message was discarded for age: no batch to handle, but the caller learns how many.
      if (end === offset && expired > 0) outcome.batches.push({ group, expired, messages: [], attempt: 0 });
      for (let from = offset; from < end; from += batchSize) {
        outcome.batches.push({
          group,
          expired: from === offset ? expired : 0,
          messages: entryMessages(lists[i], from, Math.min(end, from + batchSize), raw),
          attempt: 1,
          carriers: traced ? entryCarriers(lists[i], from, Math.min(end, from + batchSize)) : undefined,
        });
      }
    }
    return { outcome, lists };
  },
};
