import { metaMismatch } from '../queue.messages';
import type { QueueKind } from '../interfaces';
import type { QueueKeys } from './keys';
import { queueMeta } from './lua/queue-meta';
import type { RedisConnection } from './redis-connection';
import { invoke } from './script-protocol';

/**
 * How each kind of queue stores its data. Raised when a change would make data written by an
 * earlier version unreadable (delay 2: attempts and tokens apart from the payload), or data written by
 * this version unsafe for an earlier one (fixed 2: held groups, which 0.1 would claim from under
 * their deliveries).
 */
const LAYOUTS: Readonly<Record<QueueKind, number>> = { fixed: 2, delay: 2 };

/**
 * Earlier layouts this version reads as they are: recorded as the current one on start-up, so that a
 * process of the earlier version refuses to start on the queue from then on. 0: none.
 */
const UPGRADES: Readonly<Record<QueueKind, number>> = { fixed: 1, delay: 0 };

/** Records the queue (queue-meta.lua), or fails if Redis holds another kind, shard count or layout for it. */
async function record(
  connection: RedisConnection,
  keys: QueueKeys,
  name: string,
  kind: QueueKind,
  shards: number,
): Promise<void> {
  const input = { kind, shards, layout: LAYOUTS[kind], readsAsIs: UPGRADES[kind] };
  const stored = await invoke(connection.scripts, queueMeta, keys, input);
  if (stored.kind === kind && stored.shards === shards && stored.layout === LAYOUTS[kind]) return;
  throw metaMismatch(name, stored, kind, shards, LAYOUTS[kind]);
}

/**
 * Records the queue's kind, shard count and layout in Redis, or fails if they differ from what is stored
 * (once Redis answers, with `startup: 'continue'`: see `RedisConnection.whenReady`); then runs `ready`
 * (an upgrade of data an earlier version wrote, work that needs Redis).
 */
export function assertQueueMeta(
  connection: RedisConnection,
  keys: QueueKeys,
  name: string,
  kind: QueueKind,
  shards: number,
  ready?: () => Promise<void>,
): Promise<void> {
  const checked = connection.whenReady(`queue "${name}"`, async () => {
    await record(connection, keys, name, kind, shards);
    await ready?.();
  });
  // This fails start-up, which is often not followed by app.close(): an open connection would keep the process alive.
  return checked.catch(async (error: unknown) => {
    await connection.onApplicationShutdown();
    throw error;
  });
}

/** Deletes the queue's record (last, by `obliterate`: the next start records it anew). */
export async function deleteQueueMeta(connection: RedisConnection, keys: QueueKeys): Promise<void> {
  await connection.scripts.call((client) => client.unlink(keys.meta));
}

/**
 * Records the queue's kind, shard count and layout again when its record is gone (Redis lost its data,
 * or the queue was obliterated): one HEXISTS while it is there. Resolves with whether it was missing;
 * rejects with QueueConfigError when another process recorded other values meanwhile.
 */
export async function restoreQueueMeta(
  connection: RedisConnection,
  keys: QueueKeys,
  name: string,
  kind: QueueKind,
  shards: number,
): Promise<boolean> {
  // queue-meta.lua writes `kind` with the rest, and only checks the rest when it finds it.
  if ((await connection.scripts.call((client) => client.hexists(keys.meta, 'kind'))) === 1) return false;
  await record(connection, keys, name, kind, shards);
  return true;
}
