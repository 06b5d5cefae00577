import type { FixedScript } from '../fixed-queue.keys';
import { kindsOf } from '../../redis/script-protocol';

export interface FixedUpgradeInput {
  /** Most groups to name for the next call. */
  pageSize: number;
  /** The groups the previous call named: converted by this one. */
  page: string[];
}

/** Converts a page of an earlier version's groups (see fixed-upgrade.lua): the next page, empty once done. */
export const fixedUpgrade: FixedScript<'fixed-upgrade', FixedUpgradeInput, string[]> = {
  script: 'fixed-upgrade',
  keys: (shard, { page }) => [
    ...kindsOf(shard, ['lens', 'lastPush', 'stats']),
    ...page.map((group) => shard.group(group)),
  ],
  args: ({ pageSize, page }) => [pageSize, ...page],
  decode: (reply) => reply as string[],
};
