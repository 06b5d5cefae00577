import type { FixedScript } from '../fixed-queue.keys';
import { kindsOf } from '../../redis/script-protocol';

export interface FixedRequeueInput {
  id: string;
  group: string;
  capacity: number;
  batchSize: number;
  maxWaitMs: number;
}

/** Appends a dead batch's messages to its group again (see fixed-requeue.lua); null when no such dead batch. */
export const fixedRequeue: FixedScript<'fixed-requeue', FixedRequeueInput, { dropped: number; wakeAt: number } | null> =
  {
    script: 'fixed-requeue',
    keys: (shard, { group }) => [
      ...kindsOf(shard, ['ready', 'stats', 'lastPush', 'held', 'dead', 'deadData', 'pausedGroups']),
      shard.group(group),
    ],
    args: ({ id, group, capacity, batchSize, maxWaitMs }) => [id, group, capacity, batchSize, maxWaitMs],
    decode: (reply) => {
      const [found, dropped, wakeAt] = reply as number[];
      return found === 1 ? { dropped, wakeAt } : null;
    },
  };
