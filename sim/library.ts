/**
 * What the simulation's task-source actors use of the library beyond engine.ts: the queue's record
 * (QueueRecord, its owed pass), given the simulation's `Scripts` (scriptsFor) in place of a connection,
 * so its calls are the library's own.
 */
import type { Scripts } from '../libs/queue/src/redis/scripts';
import type { QueueKeys } from '../libs/queue/src/redis/keys';
import type { RedisConnection } from '../libs/queue/src/redis/redis-connection';
import { QueueRecord, type RecordCreated } from '../libs/queue/src/redis/queue-meta';

export { QueueRecord };
export type { RecordCreated };
export type { OwedPass } from '../libs/queue/src/redis/queue-meta';

/**
 * A DelayQueue's record as one process holds it: `seen` is its own, as in the library; `created` is
 * what the process does when one of its calls created the record.
 */
export function delayRecord(
  scripts: Scripts,
  now: () => number,
  keys: QueueKeys,
  name: string,
  shards: number,
  created: RecordCreated,
): QueueRecord {
  // Only what QueueRecord's calls (not assert) read of the connection.
  const connection = { scripts, clock: { estimate: now } } as unknown as RedisConnection;
  return new QueueRecord(connection, keys, name, 'delay', shards, true, created);
}
