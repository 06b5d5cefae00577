import type { DelayScript } from '../delay-queue.keys';
import type { TaskState } from '../../interfaces';
import { kindsOf } from '../../redis/script-protocol';

export interface StoredTask {
  state: TaskState;
  runAt: number;
  attempts: number;
  json: string;
  lastError?: string;
}

/** One consistent view of a task (see delay-get.lua), or null. */
export const delayGet: DelayScript<'delay-get', string, StoredTask | null> = {
  script: 'delay-get',
  keys: (shard) => kindsOf(shard, ['due', 'active', 'data', 'dead', 'errors', 'runs', 'successors']),
  args: (id) => [id],
  decode: (reply) => {
    const values = reply as [TaskState, number, string, number, string | null] | [];
    if (values.length === 0) return null;
    const [state, runAt, json, attempts, lastError] = values;
    return { state, runAt, attempts, json, ...(lastError ? { lastError } : {}) };
  },
};
