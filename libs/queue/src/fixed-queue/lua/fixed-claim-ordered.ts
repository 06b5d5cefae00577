import { FIXED_QUEUE_SCRIPTS } from './fixed-queue.scripts';
import { entryCarriers, entryMessages } from '../../redis/fixed-entry';
import { kindsOf } from '../../redis/script-protocol';
import type { GroupRateLimitOptions } from '../../interfaces';
import { decodeClaimHead, type Claimed } from './claim-reply';
import { rateArgs, rateKeys } from './group-rate';

export interface FixedClaimOrderedInput {
  batchSize: number;
  maxAgeMs: number;
  maxWaitMs: number;
  /** Most batches (one per group) to claim, and groups to list. */
  limit: number;
  /** '1' at-most-once, '2' at-least-once. */
  mode: string;
  leaseMs: number;
  maxAttempts: number;
  deadCapacity: number;
  /** onExhausted 'pause-group': a batch out of attempts pauses its group instead of dying. */
  pauseExhausted: boolean;
  groupRateLimit?: GroupRateLimitOptions;
  /** Each delivery's token is this, a dot and its place in the call. */
  tokenBase: string;
  candidates: string[];
  /** Entries read of each candidate. */
  read: number;
  raw: boolean;
  /** The consumer traces: read the messages' trace carriers too. */
  traced?: boolean;
}

/** Ordered claims (see fixed-claim-ordered.lua): per candidate offset, expired, claimed, attempt, token; one batch at most. */
export const fixedClaimOrdered = FIXED_QUEUE_SCRIPTS.define<'fixed-claim-ordered', FixedClaimOrderedInput, Claimed>({
  script: 'fixed-claim-ordered',
  keys: (shard, { candidates, groupRateLimit }) => [
    ...kindsOf(shard, ['ready', 'stats', 'lastPush', 'held', 'leases', 'dead', 'deadData', 'errors', 'pausedGroups']),
    ...candidates.map((group) => shard.group(group)),
    ...rateKeys(shard, candidates, groupRateLimit),
  ],
  args: (input) => [
    input.batchSize,
    input.maxAgeMs,
    input.maxWaitMs,
    input.limit,
    input.mode,
    input.leaseMs,
    input.maxAttempts,
    input.deadCapacity,
    input.tokenBase,
    input.pauseExhausted ? '1' : '0',
    ...rateArgs(input.groupRateLimit),
    ...input.candidates.flatMap((group) => [group, input.read]),
  ],
  reads: (shard, { candidates, read }) => candidates.map((group) => ({ key: shard.group(group), count: read })),
  decode: (reply, { candidates, raw, traced }, lists) => {
    const values = reply as (string | number)[];
    const { outcome, claimsAt } = decodeClaimHead(values);
    for (let i = 0; i < candidates.length; i++) {
      const at = claimsAt + 5 * i;
      const offset = values[at] as number;
      const expired = values[at + 1] as number;
      const claimed = values[at + 2] as number;
      const group = candidates[i];
      if (claimed > 0) {
        outcome.batches.push({
          group,
          expired,
          messages: entryMessages(lists[i], offset, offset + claimed, raw),
          attempt: values[at + 3] as number,
          token: values[at + 4] as string,
          carriers: traced ? entryCarriers(lists[i], offset, offset + claimed) : undefined,
        });
      } else if (expired > 0) {
        outcome.batches.push({ group, expired, messages: [], attempt: 0 });
      }
      if (values[at + 3] === -1) (outcome.paused ??= []).push(group);
    }
    return { outcome, lists };
  },
});
