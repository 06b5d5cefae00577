import { foreignCursor } from './redis.messages';

/** An entry of a shard's sorted set. */
export interface Scored {
  shard: number;
  member: string;
  score: number;
}

/** Where one shard's listing stands: the last score listed and how many members with it were; null once done. */
type Position = [score: number, listedAtScore: number] | null;

/** Reads up to `count` members of a shard from `score` on (inclusive), past the first `skip` with exactly that score. */
export type ShardRead = (shard: number, score: number, skip: number, count: number) => Promise<Scored[]>;

/**
 * Pages through the sorted sets of every shard as if they were one, in score order (ascending, or
 * descending for `newest first`): each page reads at most `limit` members of each shard and keeps the
 * `limit` first of them all, so a page costs O(shards × limit) whatever the sets hold. The cursor says,
 * per shard, the last score listed and how many members with it were (ties are skipped by count, in
 * Redis' own order), so a set that does not change is listed exactly once, whatever the ties.
 */
export class ScorePages {
  constructor(
    private readonly shards: number,
    private readonly descending: boolean,
  ) {}

  async page(
    cursor: string | undefined,
    limit: number,
    read: ShardRead,
  ): Promise<{ items: Scored[]; cursor: string | null }> {
    const positions = cursor === undefined ? this.start() : this.decode(cursor);
    const reads = await Promise.all(
      positions.map((position, shard) =>
        position === null ? Promise.resolve([]) : read(shard, position[0], position[1], limit),
      ),
    );
    const items = reads
      .flat()
      .sort((a, b) => (this.descending ? b.score - a.score : a.score - b.score) || a.shard - b.shard)
      .slice(0, limit);
    const next = positions.map((position, shard): Position => {
      if (position === null) return null;
      const taken = items.filter((item) => item.shard === shard);
      // All a shard had left fitted in the page: it is done.
      if (reads[shard].length < limit && taken.length === reads[shard].length) return null;
      if (taken.length === 0) return position;
      const last = taken[taken.length - 1].score;
      const atLast = taken.filter((item) => item.score === last).length;
      return [last, last === position[0] ? position[1] + atLast : atLast];
    });
    return { items, cursor: next.every((position) => position === null) ? null : encode(next) };
  }

  private start(): Position[] {
    return Array.from({ length: this.shards }, () => [this.descending ? Infinity : -Infinity, 0]);
  }

  private decode(cursor: string): Position[] {
    let positions: unknown;
    try {
      positions = JSON.parse(Buffer.from(cursor, 'base64url').toString('utf8'));
    } catch {
      positions = undefined;
    }
    const valid =
      Array.isArray(positions) &&
      positions.length === this.shards &&
      positions.every(
        (position) =>
          position === null ||
          (Array.isArray(position) &&
            position.length === 2 &&
            (typeof position[0] === 'number' || position[0] === 'inf' || position[0] === '-inf') &&
            Number.isInteger(position[1]) &&
            position[1] >= 0),
      );
    if (!valid) throw foreignCursor(cursor);
    return (positions as ([number | string, number] | null)[]).map((position) =>
      position === null ? null : [fromJson(position[0]), position[1]],
    );
  }
}

/** JSON has no infinities: a shard that listed nothing yet keeps its start as a string. */
function encode(positions: Position[]): string {
  const json = positions.map((position) =>
    position === null
      ? null
      : [Number.isFinite(position[0]) ? position[0] : String(position[0]).replace('Infinity', 'inf'), position[1]],
  );
  return Buffer.from(JSON.stringify(json), 'utf8').toString('base64url');
}

function fromJson(score: number | string): number {
  if (score === 'inf') return Infinity;
  if (score === '-inf') return -Infinity;
  return score as number;
}

/** A score as ZRANGE BYSCORE takes it. */
export function zscore(score: number): string {
  if (score === Infinity) return '+inf';
  if (score === -Infinity) return '-inf';
  return String(score);
}
