import type { FixedScript } from '../fixed-queue.keys';
import {
  batchOf,
  candidateArgs,
  claimProtocol,
  type ClaimInput,
  type ClaimRead,
  type ClaimedFrom,
} from './claim-reply';
import { rateArgs } from './group-rate';

/** An unordered claim is given only what every claim is. */
export type FixedClaimUnorderedInput = ClaimInput;

/** A candidate's values: offset, expired, claimed; cut into batches of batchSize. */
const claimedUnordered: ClaimedFrom<FixedClaimUnorderedInput> = (reply, values, at, list, input, group) => {
  const offset = values[at] as number;
  const expired = values[at + 1] as number;
  const end = offset + (values[at + 2] as number);
  // Every message was discarded for age: no batch to handle, but the caller learns how many.
  if (end === offset && expired > 0) reply.batches.push({ group, expired, messages: [], attempt: 0 });
  for (let from = offset; from < end; from += input.batchSize) {
    const to = Math.min(end, from + input.batchSize);
    reply.batches.push(batchOf(group, from === offset ? expired : 0, 1, list, from, to, input));
  }
};

/** Unordered claims (see fixed-claim-unordered.lua). */
export const fixedClaimUnordered: FixedScript<'fixed-claim-unordered', FixedClaimUnorderedInput, ClaimRead> = {
  script: 'fixed-claim-unordered',
  ...claimProtocol(['ready', 'stats', 'lastPush'], 3, claimedUnordered),
  args: (input) => [
    input.batchSize,
    input.maxAgeMs,
    input.maxWaitMs,
    input.limit,
    ...rateArgs(input.groupRateLimit),
    ...candidateArgs(input),
  ],
};
