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

export interface FixedClaimOrderedInput extends ClaimInput {
  /** '1' at-most-once, '2' at-least-once. */
  mode: string;
  leaseMs: number;
  maxAttempts: number;
  deadCapacity: number;
  /** onExhausted 'pause-group': a batch out of attempts pauses its group instead of dying. */
  pauseExhausted: boolean;
  /** Each delivery's token is this, a dot and its place in the call. */
  tokenBase: string;
}

/** A candidate's values: offset, expired, claimed, attempt (-1: its group paused), token; one batch at most. */
const claimedOrdered: ClaimedFrom<FixedClaimOrderedInput> = (reply, values, at, list, input, group) => {
  const offset = values[at] as number;
  const expired = values[at + 1] as number;
  const claimed = values[at + 2] as number;
  if (claimed > 0) {
    const token = values[at + 4] as string;
    reply.batches.push(batchOf(group, expired, values[at + 3] as number, list, offset, offset + claimed, input, token));
  } else if (expired > 0) {
    reply.batches.push({ group, expired, messages: [], attempt: 0 });
  }
  if (values[at + 3] === -1) (reply.paused ??= []).push(group);
};

/** Ordered claims (see fixed-claim-ordered.lua). */
export const fixedClaimOrdered: FixedScript<'fixed-claim-ordered', FixedClaimOrderedInput, ClaimRead> = {
  script: 'fixed-claim-ordered',
  ...claimProtocol(
    ['ready', 'stats', 'lastPush', 'held', 'leases', 'dead', 'deadData', 'errors', 'pausedGroups'],
    5,
    claimedOrdered,
  ),
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
    ...candidateArgs(input),
  ],
};
