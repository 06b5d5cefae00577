import type { GroupRateLimitOptions } from '../../interfaces';
import { entryCarriers, entryMessages } from '../fixed-entry';
import { kindsOf, type ScriptProtocol } from '../../redis/script-protocol';
import type { FixedShardKeyKind, FixedShardKeys } from '../fixed-queue.keys';
import { rateKeys } from './group-rate';

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

/** A claim's reply, with the entries it read (their sizes plan the next poll). */
export interface ClaimRead {
  reply: ClaimReply;
  lists: string[][];
}

/**
 * The head of a claim reply (see includes/claim-reply.lua): `{now, next due or -1, count, group...}`; the
 * script's values per candidate follow it, from `claimsAt`.
 */
export function decodeClaimHead(values: (string | number)[]): { reply: ClaimReply; claimsAt: number } {
  const claimsAt = 3 + (values[2] as number);
  return {
    reply: {
      serverNow: values[0] as number,
      nextDueAt: values[1] === -1 ? Infinity : (values[1] as number),
      due: values.slice(3, claimsAt) as string[],
      batches: [],
    },
    claimsAt,
  };
}

/** What both claims (ordered or not) are given. */
export interface ClaimInput {
  batchSize: number;
  maxAgeMs: number;
  maxWaitMs: number;
  /** Most batches to claim (ordered: one per group), and groups to list. */
  limit: number;
  groupRateLimit?: GroupRateLimitOptions;
  candidates: string[];
  /** Entries read of each candidate. */
  read: number;
  /** Messages as their JSON text. */
  raw: boolean;
  /** The consumer traces: read the messages' trace carriers too. */
  traced?: boolean;
}

/** Adds a candidate's batches to a claim's reply, from its values (`at` on) and the entries read of it. */
export type ClaimedFrom<In extends ClaimInput> = (
  reply: ClaimReply,
  values: (string | number)[],
  at: number,
  list: string[],
  input: In,
  group: string,
) => void;

/** A claim's last arguments, after the rate limit's: each candidate with the entries read of it. */
export function candidateArgs({ candidates, read }: ClaimInput): (string | number)[] {
  return candidates.flatMap((group) => [group, read]);
}

/**
 * What both claims' protocols share: the keys (the shard's `kinds`, each candidate's list, their
 * rate-limit keys), the reads of the candidates' heads in the same MULTI (`Scripts.runAfterReads`), and
 * the reply (its head, then `stride` values per candidate, read by `claimed`).
 */
export function claimProtocol<In extends ClaimInput>(
  kinds: readonly FixedShardKeyKind[],
  stride: number,
  claimed: ClaimedFrom<In>,
): Pick<ScriptProtocol<string, In, ClaimRead, FixedShardKeys>, 'keys' | 'reads' | 'decode'> {
  return {
    keys: (shard, { candidates, groupRateLimit }) => [
      ...kindsOf(shard, kinds),
      ...candidates.map((group) => shard.group(group)),
      ...rateKeys(shard, candidates, groupRateLimit),
    ],
    reads: (shard, { candidates, read }) => candidates.map((group) => ({ key: shard.group(group), count: read })),
    decode: (reply, input, lists) => {
      const values = reply as (string | number)[];
      const { reply: claim, claimsAt } = decodeClaimHead(values);
      const { candidates } = input;
      for (let i = 0; i < candidates.length; i++)
        claimed(claim, values, claimsAt + stride * i, lists[i], input, candidates[i]);
      return { reply: claim, lists };
    },
  };
}

/** The batch of entries `from` to `to` of a candidate's list (ordered: held by `token`). */
export function batchOf(
  group: string,
  expired: number,
  attempt: number,
  list: string[],
  from: number,
  to: number,
  { raw, traced }: ClaimInput,
  token?: string,
): ClaimedBatch {
  return {
    group,
    expired,
    messages: entryMessages(list, from, to, raw),
    attempt,
    token,
    carriers: traced ? entryCarriers(list, from, to) : undefined,
  };
}
