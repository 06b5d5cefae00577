import type { DelayScript } from '../delay-queue.keys';
import { callKeysOf, kindsOf } from '../../redis/script-protocol';
import { LateTry, type CallKey } from '../../redis/call-keys';

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
  /** A move that may reach Redis more than once: applied once (a shift never moves twice). */
  call?: CallKey;
}

/** Moves a scheduled task (see delay-move.lua), or says why it could not; LateTry for a late try. */
export const delayMove: DelayScript<'delay-move', DelayMoveInput, Placement | 'active' | 'dead' | 'missing'> = {
  script: 'delay-move',
  keys: (shard, { call }) => {
    const keys = kindsOf(shard, ['due', 'active', 'data', 'passes']);
    return call === undefined ? keys : [...keys, ...callKeysOf(shard, [call])!.keys];
  },
  args: ({ id, mode, ms, carrier, call }, shard) => {
    const args = [id, mode, ms, carrier ?? ''];
    return call === undefined ? args : [...args, ...callKeysOf(shard, [call])!.args];
  },
  decode: (reply) => {
    const [moved, runAt, serverNow, isHead] = reply as [number, number | string, number, number];
    if (runAt === 'late') throw new LateTry();
    if (moved === 0) return runAt as 'active' | 'dead' | 'missing';
    return { runAt: runAt as number, serverNow, isHead: isHead === 1 };
  },
};
