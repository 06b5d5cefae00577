import type { DelayScript } from '../delay-queue.keys';
import type { NewestFirstPage } from '../../redis/newest-first';
import { kindsOf } from '../../redis/script-protocol';
import type { StoredTask } from './delay-get';

export type DeadTask = StoredTask & { id: string; diedAt: number };

export interface DelayDeadInput {
  count: number;
  /** Latest death time to list ('+inf' for the first page). */
  latest: string;
  /** How many dead at exactly `latest` the earlier pages listed. */
  listedAtLatest: number;
}

/** One page of a shard's dead letters, newest first (see delay-dead.lua). */
export const delayDead: DelayScript<'delay-dead', DelayDeadInput, NewestFirstPage<DeadTask>> = {
  script: 'delay-dead',
  keys: (shard) => kindsOf(shard, ['dead', 'data', 'errors', 'runs']),
  args: ({ count, latest, listedAtLatest }) => [count, latest, listedAtLatest],
  decode: (reply) => {
    const values = reply as (string | number | null)[];
    const items: DeadTask[] = [];
    for (let i = 0; i < values.length; i += 5) {
      // '<attempts>:<token>:<runAt>' of the last delivery.
      const [attempts, , runAt] = (values[i + 3] as string).split(':');
      items.push({
        id: values[i] as string,
        diedAt: values[i + 1] as number,
        state: 'dead',
        runAt: Number(runAt),
        attempts: Number(attempts),
        json: values[i + 2] as string,
        ...(values[i + 4] ? { lastError: values[i + 4] as string } : {}),
      });
    }
    return { items, listed: items.length };
  },
};
