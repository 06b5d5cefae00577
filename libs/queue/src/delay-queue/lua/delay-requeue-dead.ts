import type { DelayScript } from '../delay-queue.keys';
import { kindsOf } from '../../redis/script-protocol';

/** Re-queues one chunk of a shard's dead letters, due now (see delay-requeue-dead.lua). */
export const delayRequeueDead: DelayScript<'delay-requeue-dead', number, { requeued: number; serverNow: number }> = {
  script: 'delay-requeue-dead',
  keys: (shard) => kindsOf(shard, ['due', 'dead', 'errors', 'runs']),
  args: (most) => [most],
  decode: (reply) => {
    const [requeued, serverNow] = reply as [number, number];
    return { requeued, serverNow };
  },
};
