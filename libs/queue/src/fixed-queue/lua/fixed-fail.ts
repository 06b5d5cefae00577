import type { FixedScript } from '../fixed-queue.keys';
import { kindsOf } from '../../redis/script-protocol';
import type { GroupLease } from './fixed-ack';

export interface FixedFailInput {
  batchSize: number;
  maxWaitMs: number;
  lease: GroupLease;
  retryDelayMs: number;
  maxAttempts: number;
  deadCapacity: number;
  error: string;
  /** onExhausted 'pause-group': a batch out of attempts pauses its group instead of dying. */
  pauseExhausted: boolean;
  /** Messages of the batch its handler handled, from the first (PartialBatchError): acknowledged. */
  handled: number;
  /** Messages in the batch as it was delivered. */
  size: number;
}

export type FailReply = {
  /** What the failure made of the batch: retried, buried, its group paused, or nothing (its group gone, its lease stale). */
  fate: 'retry' | 'dead' | 'paused' | 'gone' | 'stale';
  at: number;
  /** Messages acknowledged first (fewer than `handled` where capacity evicted some meanwhile). */
  acknowledged: number;
};

/** Records a failed at-least-once delivery: a retry, its burial or its group's pause (see fixed-fail.lua). */
export const fixedFail: FixedScript<'fixed-fail', FixedFailInput, FailReply> = {
  script: 'fixed-fail',
  keys: (shard, { lease }) => [
    ...kindsOf(shard, ['ready', 'stats', 'lastPush', 'held', 'leases', 'dead', 'deadData', 'errors', 'pausedGroups']),
    shard.group(lease.group),
  ],
  args: (input) => [
    input.batchSize,
    input.maxWaitMs,
    input.lease.group,
    input.lease.token,
    input.retryDelayMs,
    input.maxAttempts,
    input.deadCapacity,
    input.error,
    input.pauseExhausted ? '1' : '0',
    input.handled,
    input.size,
  ],
  decode: (reply) => {
    const [fate, at, acknowledged] = reply as [FailReply['fate'], number, number];
    return { fate, at, acknowledged };
  },
};
