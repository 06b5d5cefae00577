import { FIXED_QUEUE_SCRIPTS } from './fixed-queue.scripts';
import { kindsOf } from '../../redis/script-protocol';

/** One shard's counters (see fixed-stats.lua). */
export interface FixedShardStats {
  ready: number;
  pending: number;
  pushed: number;
  dropped: number;
  expired: number;
  delivered: number;
  /** Messages ever buried. */
  dead: number;
  redelivered: number;
  requeued: number;
  /** Messages in dead batches now. */
  deadNow: number;
  /** Groups whose batch is being handled. */
  active: number;
  /** Groups paused (pauseGroup, or onExhausted 'pause-group'). */
  pausedGroups: number;
  /** Earliest due time, or -1. */
  nextDue: number;
  serverNow: number;
  /** Deliveries given back at shutdown. */
  givenBack: number;
}

export const fixedStats = FIXED_QUEUE_SCRIPTS.define<'fixed-stats', void, FixedShardStats>({
  script: 'fixed-stats',
  keys: (shard) => kindsOf(shard, ['ready', 'stats', 'leases', 'pausedGroups']),
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
      deadNow,
      active,
      pausedGroups,
      nextDue,
      serverNow,
      givenBack,
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
      deadNow,
      active,
      pausedGroups,
      nextDue,
      serverNow,
      givenBack,
    };
  },
});
