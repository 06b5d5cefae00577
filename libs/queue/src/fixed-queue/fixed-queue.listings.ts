import type { GroupListing, GroupSummary, PausedGroup } from '../interfaces';
import type { QueueKeys } from '../redis/keys';
import { zscore, type Scored } from '../redis/score-pages';
import type { Scripts } from '../redis/scripts';
import type { FixedShardKeyKind } from './fixed-queue.keys';
import { parseDeadRecord, type DeadRecord } from './lua/fixed-dead';

/** Dead batches read per call: each holds up to batchSize messages. */
export const DEAD_BATCHES_PER_CALL = 20;

/**
 * What a FixedQueue's listings read (its groups, paused groups, dead batches, due heads): plain reads
 * of its keys, a bounded page each, beside the store's scripts, which change them.
 */
export class FixedQueueListings {
  constructor(
    private readonly scripts: Scripts,
    private readonly keys: QueueKeys<FixedShardKeyKind>,
    private readonly shards: number,
  ) {}

  /** One ZSCAN step over a shard's groups (the last-push index), with their sizes: the next scan cursor and the groups holding messages. */
  async scanGroups(shard: number, scan: string, count: number): Promise<[string, GroupListing[]]> {
    const [next, flat] = await this.scripts.call((client) =>
      client.zscan(this.keys.key(shard, 'lastPush'), scan, 'COUNT', count),
    );
    const groups = flat.filter((_, i) => i % 2 === 0);
    const sizes = await Promise.all(
      groups.map((group) => this.scripts.call((client) => client.llen(this.keys.member(shard, 'g', group)))),
    );
    return [next, groups.map((group, i) => ({ group, size: sizes[i] })).filter(({ size }) => size > 0)];
  }

  /** One HSCAN step over a shard's paused groups: the next scan cursor and the groups it found. */
  async scanPausedGroups(shard: number, scan: string, count: number): Promise<[string, PausedGroup[]]> {
    const [next, flat] = await this.scripts.call((client) =>
      client.hscan(this.keys.key(shard, 'pausedGroups'), scan, 'COUNT', count),
    );
    const groups: PausedGroup[] = [];
    for (let i = 0; i < flat.length; i += 2) {
      // '<paused at>:<reason>' (see the paused-groups include).
      const record = flat[i + 1];
      const colon = record.indexOf(':');
      groups.push({
        group: flat[i],
        pausedAt: Number(record.slice(0, colon)),
        reason: record.slice(colon + 1) as PausedGroup['reason'],
      });
    }
    return [next, groups];
  }

  /** Up to `count` dead batch ids of a shard with their death times, down from `score`, past the first `skip` at exactly that time. */
  async deadRange(shard: number, score: number, skip: number, count: number): Promise<Scored[]> {
    const reply = await this.scripts.call((client) =>
      client.zrange(
        this.keys.key(shard, 'dead'),
        zscore(score),
        '-inf',
        'BYSCORE',
        'REV',
        'LIMIT',
        skip,
        count,
        'WITHSCORES',
      ),
    );
    const entries: Scored[] = [];
    for (let i = 0; i < reply.length; i += 2) entries.push({ shard, member: reply[i], score: Number(reply[i + 1]) });
    return entries;
  }

  /** Dead batches of a shard by id; null where one is gone (re-queued, trimmed). */
  async deadRecords(shard: number, ids: string[]): Promise<(DeadRecord | null)[]> {
    const stored: (string | null)[] = [];
    // A few at a time, as `dead` pages them: one HMGET of a thousand batches would hold Redis for long.
    for (let from = 0; from < ids.length; from += DEAD_BATCHES_PER_CALL) {
      const slice = ids.slice(from, from + DEAD_BATCHES_PER_CALL);
      stored.push(...(await this.scripts.call((client) => client.hmget(this.keys.key(shard, 'deadData'), ...slice))));
    }
    return stored.map((record, i) => (record === null ? null : parseDeadRecord(ids[i], record)));
  }

  /** The first `perShard` groups of each shard's ready index (the due-soonest: full groups are due now) with their sizes. */
  async readyHeads(perShard: number): Promise<GroupSummary[]> {
    const shards = await Promise.all(
      Array.from({ length: this.shards }, async (_, shard) => {
        const heads = await this.scripts.call((client) =>
          client.zrange(this.keys.key(shard, 'ready'), 0, perShard - 1, 'WITHSCORES'),
        );
        return Promise.all(
          Array.from({ length: heads.length / 2 }, async (_, i): Promise<GroupSummary> => {
            const group = heads[2 * i];
            const size = await this.scripts.call((client) => client.llen(this.keys.member(shard, 'g', group)));
            return { group, size, dueAt: Number(heads[2 * i + 1]) };
          }),
        );
      }),
    );
    return shards.flat();
  }
}
