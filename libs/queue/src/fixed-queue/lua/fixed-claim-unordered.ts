import { FIXED_QUEUE_SCRIPTS } from './fixed-queue.scripts';
import { entryCarriers, entryMessages } from '../../redis/fixed-entry';
import { kindsOf } from '../../redis/script-protocol';
import type { GroupRateLimitOptions } from '../../interfaces';
import { decodeClaimHead, type Claimed } from './claim-reply';
import { rateArgs, rateKeys } from './group-rate';

export interface FixedClaimUnorderedInput {
  batchSize: number;
  maxAgeMs: number;
  maxWaitMs: number;
  /** Most batches to claim, and groups to list. */
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

/** Unordered claims (see fixed-claim-unordered.lua): per candidate offset, expired, claimed, cut into batches of batchSize. */
export const fixedClaimUnordered = FIXED_QUEUE_SCRIPTS.define<
  'fixed-claim-unordered',
  FixedClaimUnorderedInput,
  Claimed
>({
  script: 'fixed-claim-unordered',
  keys: (shard, { candidates, groupRateLimit }) => [
    ...kindsOf(shard, ['ready', 'stats', 'lastPush']),
    ...candidates.map((group) => shard.group(group)),
    ...rateKeys(shard, candidates, groupRateLimit),
  ],
  args: ({ batchSize, maxAgeMs, maxWaitMs, limit, groupRateLimit, candidates, read }) => [
    batchSize,
    maxAgeMs,
    maxWaitMs,
    limit,
    ...rateArgs(groupRateLimit),
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
});
