/**
 * What the simulation's task-source and `@Recurring` actors use of the library beyond engine.ts: the
 * queue's record (QueueRecord, its owed pass) and the recurring layer's store, each given the
 * simulation's `Scripts` (scriptsFor) in place of a connection, so their calls are the library's own.
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

export { RecurringStore } from '../libs/queue/src/recurring/recurring.store';
export {
  DECLARE_CALLS,
  DECLARE_EVERY_MS,
  DECLARER_ALIVE_MS,
  FORGOTTEN_AFTER_MS,
} from '../libs/queue/src/recurring/recurring-declaration';
export { recurringQueueOptions } from '../libs/queue/src/recurring/recurring-mounter';
export { RepeatSchedule } from '../libs/queue/src/delay-queue/repeat-schedule';
export { RepeatOccurrences, type OccurrencePlan } from '../libs/queue/src/delay-queue/repeat-occurrences';
export type { RecurringDeclared } from '../libs/queue/src/recurring/lua/recurring-declare';
export type { ServerClock } from '../libs/queue/src/redis/server-clock';
