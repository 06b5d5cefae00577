import type { DelayScript } from '../delay-queue.keys';
import { kindsOf } from '../../redis/script-protocol';

/** One shard's counters (see delay-stats.lua). */
export interface DelayShardStats {
  scheduled: number;
  active: number;
  dead: number;
  /** Earliest due time, or -1. */
  nextDue: number;
  scheduledTotal: number;
  fired: number;
  completed: number;
  retried: number;
  deadTotal: number;
  /** Tasks due now. */
  due: number;
  serverNow: number;
  /** Deliveries given back at shutdown. */
  givenBack: number;
  /** When the earliest task was due (before `nextDue` when it is back after a lost lease), or -1. */
  headDueAt: number;
}

export const delayStats: DelayScript<'delay-stats', void, DelayShardStats> = {
  script: 'delay-stats',
  keys: (shard) => kindsOf(shard, ['due', 'active', 'dead', 'stats', 'runs']),
  args: () => [],
  decode: (reply) => {
    const [scheduled, active, dead, nextDue, scheduledTotal, fired, completed, retried, deadTotal, due, serverNow] =
      reply as number[];
    const [givenBack, headDueAt] = (reply as number[]).slice(11);
    const counters = { scheduledTotal, fired, completed, retried, deadTotal, givenBack };
    return { scheduled, active, dead, nextDue, ...counters, due, serverNow, headDueAt };
  },
};
