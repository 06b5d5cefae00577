import type { DelayScript } from '../delay-queue.keys';
import type { ResolvedTime } from '../../validation/time';
import { kindsOf } from '../../redis/script-protocol';
import type { Placement } from './delay-move';

/** Brings a dead-lettered task back (see delay-requeue.lua); null when it is not dead. */
export const delayRequeue: DelayScript<'delay-requeue', { id: string; time: ResolvedTime }, Placement | null> = {
  script: 'delay-requeue',
  keys: (shard) => kindsOf(shard, ['due', 'dead', 'errors', 'runs', 'passes']),
  args: ({ id, time: [mode, ms] }) => [id, mode, ms],
  decode: (reply) => {
    const [found, runAt, serverNow, isHead] = reply as number[];
    return found === 1 ? { runAt, serverNow, isHead: isHead === 1 } : null;
  },
};
