import type { DelayScript } from '../delay-queue.keys';
import { kindsOf } from '../../redis/script-protocol';

export interface ClaimedTask {
  id: string;
  attempt: number;
  token: string;
  /** When this delivery became due: the task's time, or when the lease of its previous delivery ran out. */
  runAt: number;
  /** When the task was due: its time, kept when a delivery's lease ran out or it was given back. */
  dueAt: number;
  json: string;
  /** The repeat this task is an occurrence of, as its hash holds it (see repeat-entry.lua). */
  repeat?: string;
}

export interface DelayClaimReply {
  serverNow: number;
  nextDueAt: number;
  tasks: ClaimedTask[];
}

export interface DelayClaimInput {
  limit: number;
  leaseMs: number;
  maxAttempts: number;
  deadCapacity: number;
  /** Fencing token of this call's deliveries. */
  token: string;
}

/** Claims due tasks of one shard, after returning those whose lease ran out (see delay-claim.lua). */
export const delayClaim: DelayScript<'delay-claim', DelayClaimInput, DelayClaimReply> = {
  script: 'delay-claim',
  keys: (shard) =>
    kindsOf(shard, ['due', 'active', 'data', 'dead', 'stats', 'errors', 'runs', 'repeats', 'successors']),
  args: ({ limit, leaseMs, maxAttempts, deadCapacity, token }) => [limit, leaseMs, maxAttempts, deadCapacity, token],
  decode: (reply) => {
    const values = reply as (string | number)[];
    const tasks: ClaimedTask[] = [];
    for (let i = 2; i < values.length; i += 7) {
      tasks.push({
        id: values[i] as string,
        attempt: values[i + 1] as number,
        token: values[i + 2] as string,
        runAt: values[i + 3] as number,
        dueAt: values[i + 6] as number,
        json: values[i + 4] as string,
        ...(values[i + 5] !== '' && { repeat: values[i + 5] as string }),
      });
    }
    return { serverNow: values[0] as number, nextDueAt: values[1] === -1 ? Infinity : (values[1] as number), tasks };
  },
};
