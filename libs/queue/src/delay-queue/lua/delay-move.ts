import { DELAY_QUEUE_SCRIPTS } from './delay-queue.scripts';
import { kindsOf } from '../../redis/script-protocol';

export interface Placement {
  runAt: number;
  serverNow: number;
  /** The task became its shard's earliest: a sleeping poller may need waking. */
  isHead: boolean;
}

export interface DelayMoveInput {
  id: string;
  mode: 'at' | 'in' | 'by';
  ms: number;
  /** Traced queues: the trace context of the move, to store with the task. */
  carrier?: string;
}

/** Moves a scheduled task (see delay-move.lua), or says why it could not. */
export const delayMove = DELAY_QUEUE_SCRIPTS.define<
  'delay-move',
  DelayMoveInput,
  Placement | 'active' | 'dead' | 'missing'
>({
  script: 'delay-move',
  keys: (shard) => kindsOf(shard, ['due', 'active', 'data', 'passes']),
  args: ({ id, mode, ms, carrier }) => [id, mode, ms, carrier ?? ''],
  decode: (reply) => {
    const [moved, runAt, serverNow, isHead] = reply as [number, number | string, number, number];
    if (moved === 0) return runAt as 'active' | 'dead' | 'missing';
    return { runAt: runAt as number, serverNow, isHead: isHead === 1 };
  },
});
