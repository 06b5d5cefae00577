import { kindsOf, type ScriptProtocol } from '../script-protocol';

/** One shard's counters (see fixed-stats.lua). */
export interface FixedShardStats {
  ready: number;
  pending: number;
  pushed: number;
  dropped: number;
  expired: number;
  delivered: number;
  dead: number;
  redelivered: number;
  requeued: number;
  /** Groups whose batch is being handled. */
  active: number;
  /** Earliest due time, or -1. */
  nextDue: number;
  serverNow: number;
}

export const fixedStats: ScriptProtocol<void, FixedShardStats> = {
  script: 'fixed-stats',
  keys: (shard) => kindsOf(shard, ['ready', 'stats', 'leases']),
  args: () => [],
  decode: (reply) => {
    const [
      ready,
      pending,
      pushed,
      dropped,
      expired,
      delivered,
      dead,
      redelivered,
      requeued,
      active,
      nextDue,
      serverNow,
    ] = reply as number[];
    return {
      ready,
      pending,
      pushed,
      dropped,
      expired,
      delivered,
      dead,
      redelivered,
      requeued,
      active,
      nextDue,
      serverNow,
    };
  },
};
