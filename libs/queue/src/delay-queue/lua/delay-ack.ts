import type { DelayScript } from '../delay-queue.keys';
import { kindsOf } from '../../redis/script-protocol';

/**
 * The hold of a delivery on its task: the task, and the fencing token its claim took (a call naming a
 * token that lost the task changes nothing).
 */
export interface TaskLease {
  id: string;
  token: string;
}

/** What an acknowledgement did: completed (false: stale), and the run time of a successor it made due. */
export interface Acked {
  completed: boolean;
  successorAt?: number;
}

/** Completes the deliveries that still hold their leases (see delay-ack.lua). */
export const delayAck: DelayScript<'delay-ack', TaskLease[], Acked[]> = {
  script: 'delay-ack',
  keys: (shard) => kindsOf(shard, ['due', 'active', 'data', 'stats', 'errors', 'runs', 'successors', 'passes']),
  args: (leases) => leases.flatMap(({ id, token }) => [id, token]),
  decode: (reply) => {
    const values = reply as number[];
    const count = values.length / 2;
    return values.slice(0, count).map((completed, i) => {
      const successorAt = values[count + i];
      return { completed: completed === 1, ...(successorAt >= 0 && { successorAt }) };
    });
  },
};
