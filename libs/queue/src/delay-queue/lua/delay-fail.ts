import type { DelayScript } from '../delay-queue.keys';
import { kindsOf } from '../../redis/script-protocol';
import type { TaskLease } from './delay-ack';

export interface DelayFailInput {
  lease: TaskLease;
  maxAttempts: number;
  retryDelayMs: number;
  deadCapacity: number;
  error: string;
}

/** What the failure made of the task (`fate`): retried at `at`, or buried (dead) at `at`. */
export type DelayFailReply = { fate: 'retry' | 'dead'; at: number } | null;

/** Fails a delivery (see delay-fail.lua): its retry or burial, or null when the token is stale. */
export const delayFail: DelayScript<'delay-fail', DelayFailInput, DelayFailReply> = {
  script: 'delay-fail',
  keys: (shard) => kindsOf(shard, ['due', 'active', 'data', 'dead', 'stats', 'errors', 'runs', 'successors', 'passes']),
  args: ({ lease, maxAttempts, retryDelayMs, deadCapacity, error }) => [
    lease.id,
    lease.token,
    maxAttempts,
    retryDelayMs,
    deadCapacity,
    error,
  ],
  decode: (reply) => {
    const [applied, fate, at] = reply as [number, ('retry' | 'dead')?, number?];
    return applied === 1 ? { fate: fate!, at: at! } : null;
  },
};
