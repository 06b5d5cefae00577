import type { DelayScript } from '../delay-queue.keys';
import { kindsOf } from '../../redis/script-protocol';
import { tickWindowArgs, type TickWindow } from './tick-window';

export interface DelayRepeatInput {
  id: string;
  schedule: string;
  json: string;
  window: TickWindow;
}

export type RepeatDeclared =
  | { status: 'created' | 'changed' | 'unchanged'; nextRunAt: number }
  /** The window missed Redis' now (`serverNow`): compute it again around that. */
  | { status: 'clock'; serverNow: number }
  /** The schedule has no tick after now. */
  | { status: 'ended'; serverNow: number };

/** Declares a repeat and its pending occurrence (see delay-repeat.lua). */
export const delayRepeat: DelayScript<'delay-repeat', DelayRepeatInput, RepeatDeclared> = {
  script: 'delay-repeat',
  keys: (shard) => kindsOf(shard, ['due', 'active', 'data', 'dead', 'stats', 'errors', 'runs', 'repeats']),
  args: ({ id, schedule, json, window }) => [id, schedule, json, ...tickWindowArgs(window)],
  decode: (reply) => {
    const [status, at] = reply as [RepeatDeclared['status'], number];
    return status === 'clock' || status === 'ended' ? { status, serverNow: at } : { status, nextRunAt: at };
  },
};
