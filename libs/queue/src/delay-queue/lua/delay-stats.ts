import { kindsOf, type ScriptProtocol } from '../../redis/script-protocol';

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
}

export const delayStats: ScriptProtocol<'delay-stats', void, DelayShardStats> = {
  script: 'delay-stats',
  keys: (shard) => kindsOf(shard, ['due', 'active', 'dead', 'stats']),
  args: () => [],
  decode: (reply) => {
    const [
      scheduled,
      active,
      dead,
      nextDue,
      scheduledTotal,
      fired,
      completed,
      retried,
      deadTotal,
      due,
      serverNow,
      givenBack,
    ] = reply as number[];
    return {
      scheduled,
      active,
      dead,
      nextDue,
      scheduledTotal,
      fired,
      completed,
      retried,
      deadTotal,
      due,
      serverNow,
      givenBack,
    };
  },
};
