import { DELAY_QUEUE_SCRIPTS } from './delay-queue.scripts';
import { kindsOf } from '../../redis/script-protocol';

/** A delivery of a task, as acknowledgements and heartbeats name it. */
export interface TaskDelivery {
  id: string;
  token: string;
}

/** What an acknowledgement did: completed (false: stale), and the run time of a successor it made due. */
export interface Acked {
  completed: boolean;
  successorAt?: number;
}

/** Completes deliveries (see delay-ack.lua). */
export const delayAck = DELAY_QUEUE_SCRIPTS.define<'delay-ack', TaskDelivery[], Acked[]>({
  script: 'delay-ack',
  keys: (shard) => kindsOf(shard, ['due', 'active', 'data', 'stats', 'errors', 'runs', 'successors']),
  args: (deliveries) => deliveries.flatMap(({ id, token }) => [id, token]),
  decode: (reply) => {
    const values = reply as number[];
    const count = values.length / 2;
    return values.slice(0, count).map((completed, i) => {
      const successorAt = values[count + i];
      return { completed: completed === 1, ...(successorAt >= 0 && { successorAt }) };
    });
  },
});
