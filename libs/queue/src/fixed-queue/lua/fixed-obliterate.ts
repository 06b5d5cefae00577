import type { FixedScript, FixedShardKeyKind } from '../fixed-queue.keys';
import { kindsOf } from '../../redis/script-protocol';

/** Every key of a shard but the groups' lists: `lastPush` first, as fixed-obliterate reads them. */
const SHARD_KINDS: FixedShardKeyKind[] = [
  'lastPush',
  'ready',
  'stats',
  'held',
  'leases',
  'dead',
  'deadData',
  'errors',
  'pausedGroups',
];

export interface FixedObliterateInput {
  /** The queue has a groupRateLimit: the page's groups' rate lists go with their lists. */
  rated: boolean;
  /** Most groups to name for the next call. */
  pageSize: number;
  /** The groups the previous call named: their lists are deleted by this one. */
  page: string[];
}

/** Deletes a page of a shard's groups, and the shard once none is left (see fixed-obliterate.lua): the next page. */
export const fixedObliterate: FixedScript<'fixed-obliterate', FixedObliterateInput, string[]> = {
  script: 'fixed-obliterate',
  keys: (shard, { page, rated }) => [
    ...kindsOf(shard, SHARD_KINDS),
    ...page.map((group) => shard.group(group)),
    ...(rated ? page.map((group) => shard.rate(group)) : []),
  ],
  args: ({ pageSize, page }) => [SHARD_KINDS.length, pageSize, ...page],
  decode: (reply) => reply as string[],
};
