import type { DelayScript } from '../delay-queue.keys';
import type { MissedTicks } from '../../interfaces';
import { kindsOf } from '../../redis/script-protocol';
import { tickWindowArgs, type TickWindow } from './tick-window';

export interface DelayAdvanceInput {
  id: string;
  token: string;
  /** The schedule text the ticks were computed from. */
  schedule: string;
  missed: MissedTicks;
  outcome: 'completed' | 'failed' | 'skipped';
  error: string;
  /** The tick after the occurrence, or null when the schedule has none. */
  after: number | null;
  window: TickWindow;
}

export type DelayAdvanceReply =
  | { status: 'next'; nextRunAt: number }
  | { status: 'ended' | 'fenced' }
  | { status: 'clock'; serverNow: number }
  | { status: 'changed'; schedule: string };

/** Ends an occurrence of a repeat and places the next (see delay-advance.lua). */
export const delayAdvance: DelayScript<'delay-advance', DelayAdvanceInput, DelayAdvanceReply> = {
  script: 'delay-advance',
  keys: (shard) => kindsOf(shard, ['due', 'active', 'data', 'stats', 'errors', 'runs', 'repeats', 'successors']),
  args: ({ id, token, schedule, missed, outcome, error, after, window }) => [
    id,
    token,
    schedule,
    missed,
    outcome,
    error,
    after ?? -1,
    ...tickWindowArgs(window),
  ],
  decode: (reply) => {
    const [status, value] = reply as [DelayAdvanceReply['status'], (number | string)?];
    if (status === 'next') return { status, nextRunAt: value as number };
    if (status === 'clock') return { status, serverNow: value as number };
    if (status === 'changed') return { status, schedule: value as string };
    return { status };
  },
};
