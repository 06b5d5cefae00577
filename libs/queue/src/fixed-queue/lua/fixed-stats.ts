import type { FixedScript } from '../fixed-queue.keys';
import { kindsOf } from '../../redis/script-protocol';

/**
 * What one shard counts, in the order of fixed-stats.lua's reply. Most are summed into the
 * FixedQueueStats field of the same name; besides them: `ready`, its groups due; `dead`, messages ever
 * buried (`deadTotal`); `deadNow`, messages in dead batches now (`dead`); `nextDue`, its earliest due
 * time or -1; `serverNow`, Redis' clock.
 */
const FIELDS = [
  'ready',
  'pending',
  'pushed',
  'dropped',
  'expired',
  'delivered',
  'dead',
  'redelivered',
  'requeued',
  'deadNow',
  'active',
  'pausedGroups',
  'nextDue',
  'serverNow',
  'givenBack',
] as const;

/** One shard's counters (see `FIELDS`). */
export type FixedShardStats = Record<(typeof FIELDS)[number], number>;

export const fixedStats: FixedScript<'fixed-stats', void, FixedShardStats> = {
  script: 'fixed-stats',
  keys: (shard) => kindsOf(shard, ['ready', 'stats', 'leases', 'pausedGroups']),
  args: () => [],
  decode: (reply) => {
    const values = reply as number[];
    const stats = {} as FixedShardStats;
    FIELDS.forEach((field, at) => (stats[field] = values[at]));
    return stats;
  },
};
