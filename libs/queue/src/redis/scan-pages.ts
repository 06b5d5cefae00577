import type { Page } from '../interfaces';
import { foreignCursor } from './redis.messages';

/** One SCAN-family step over a shard's key: the next scan cursor ('0': done) and what it found. */
export type ScanStep<T> = (shard: number, scan: string, count: number) => Promise<[string, T[]]>;

/** Where a listing stands: [shard, scan cursor, items of that step already listed]. */
type Position = [shard: number, scan: string, skip: number];

/**
 * Pages through a key of every shard (a hash or a sorted set) with ZSCAN / HSCAN steps, shard after
 * shard, in no particular order. A page may hold fewer than `limit` items before the end (a step may
 * answer with nothing), and an item added or removed meanwhile may be missed or listed twice: what a
 * SCAN promises. A step that found more than the page has room for is taken again by the next page,
 * past what was listed.
 */
export class ScanPages {
  constructor(private readonly shards: number) {}

  async page<T>(cursor: string | undefined, limit: number, step: ScanStep<T>): Promise<Page<T>> {
    let [shard, scan, skip] = this.decode(cursor);
    const items: T[] = [];
    // Bounds the calls of a page where the keys are sparse (a step may answer with nothing).
    for (let steps = 0; shard < this.shards && items.length < limit && steps < 2 * this.shards + 8; steps++) {
      const [next, found] = await step(shard, scan, limit);
      const fresh = found.slice(skip);
      const room = limit - items.length;
      if (fresh.length > room) {
        items.push(...fresh.slice(0, room));
        skip += room;
        break;
      }
      items.push(...fresh);
      skip = 0;
      if (next === '0') {
        shard++;
        scan = '0';
      } else scan = next;
    }
    return {
      items,
      cursor: shard >= this.shards ? null : Buffer.from(JSON.stringify([shard, scan, skip])).toString('base64url'),
    };
  }

  private decode(cursor: string | undefined): Position {
    if (cursor === undefined) return [0, '0', 0];
    let position: unknown;
    try {
      position = typeof cursor === 'string' ? JSON.parse(Buffer.from(cursor, 'base64url').toString('utf8')) : undefined;
    } catch {
      position = undefined;
    }
    if (
      Array.isArray(position) &&
      position.length === 3 &&
      Number.isInteger(position[0]) &&
      position[0] >= 0 &&
      position[0] < this.shards &&
      typeof position[1] === 'string' &&
      /^\d+$/.test(position[1]) &&
      Number.isInteger(position[2]) &&
      position[2] >= 0
    )
      return position as Position;
    throw foreignCursor(cursor);
  }
}
