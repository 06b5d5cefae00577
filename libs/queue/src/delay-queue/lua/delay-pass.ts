import type { DelayScript } from '../delay-queue.keys';
import { kindsOf } from '../../redis/script-protocol';

export interface PassInput {
  op: 'begin' | 'renew' | 'end';
  pass: string;
  leaseMs: number;
}

/** Begins, renews or ends a pass of the task source on a shard (see delay-pass.lua): false when a renewal found it expired. */
export const delayPass: DelayScript<'delay-pass', PassInput, boolean> = {
  script: 'delay-pass',
  keys: (shard) => kindsOf(shard, ['passes']),
  args: ({ op, pass, leaseMs }) => [op, pass, leaseMs],
  decode: (reply) => reply === 1,
};
