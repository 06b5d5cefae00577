import type { FixedScript } from '../fixed-queue.keys';
import type { DeadBatch } from '../../interfaces';
import type { NewestFirstPage } from '../../redis/newest-first';
import { kindsOf } from '../../redis/script-protocol';

/** A dead batch as stored: its entries still carry their push times. */
export type DeadRecord = Omit<DeadBatch, 'messages' | 'pushedAt'> & { entries: string[] };

/** What a dead batch's record says before its messages (see the bury include). */
export interface DeadHeader {
  group: string;
  attempts: number;
  error: string;
  diedAt: number;
}

/** A stored dead batch: a JSON header, then the entries as stored, one a line. */
export function parseDeadRecord(id: string, stored: string): DeadRecord {
  const [header, ...entries] = stored.split('\n');
  const { group, attempts, error, diedAt } = JSON.parse(header) as DeadHeader;
  return { id, group, attempts, lastError: error, diedAt, entries };
}

export interface FixedDeadInput {
  count: number;
  /** Latest death time to list ('+inf' for the first page). */
  latest: string;
  /** How many dead at exactly `latest` the earlier pages listed. */
  listedAtLatest: number;
}

/** One page of a shard's dead batches, newest first (see fixed-dead.lua). */
export const fixedDead: FixedScript<'fixed-dead', FixedDeadInput, NewestFirstPage<DeadRecord>> = {
  script: 'fixed-dead',
  keys: (shard) => kindsOf(shard, ['dead', 'deadData']),
  args: ({ count, latest, listedAtLatest }) => [count, latest, listedAtLatest],
  decode: (reply) => {
    const values = reply as (string | null)[];
    const items: DeadRecord[] = [];
    for (let i = 0; i < values.length; i += 2) {
      const stored = values[i + 1];
      // Trimmed (capacity) between the two reads of the script: nothing left to show.
      if (stored !== null) items.push(parseDeadRecord(values[i]!, stored));
    }
    return { items, listed: values.length / 2 };
  },
};
