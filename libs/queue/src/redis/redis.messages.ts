import {
  QueueConfigError,
  QueueConnectionError,
  QueueError,
  QueueInputError,
  QueueMemoryError,
  QueueReplicationError,
  type QueueCallOutcome,
} from '../errors';
import type { QueueKind } from '../interfaces';

/** The errors of the Redis layer (connection, scripts, pages), their texts in one place. */

export const notRedisUrl = (target: string, scheme: string) =>
  new QueueConfigError(
    `Invalid options for QueueModule.forRoot: connection "${target}" is a ${scheme}:// URL; ` +
      'Redis URLs start with redis:// (or rediss:// for TLS), e.g. redis://127.0.0.1:6379',
  );

export const noUrlScheme = (fix: string) =>
  new QueueConfigError(
    `Invalid options for QueueModule.forRoot: connection has no scheme; a Redis URL starts with redis:// ` +
      `(or rediss:// for TLS): ${fix}`,
  );

/** What a write refused or dropped by `HeldWrites.close` rejects with. */
export const notSentAtShutdown = (what: string) =>
  new QueueConnectionError(
    `The application is shutting down and its Redis connection is closing: the ${what} was not sent, so nothing was applied`,
    { outcome: 'not-sent' },
  );

export const refusedAtStartup = (target: string, reason: string, cause: unknown) =>
  new QueueConfigError(
    `Redis at ${target} refused the connection (${reason}); the application does not start. Check the credentials`,
    { cause },
  );

export const unreachableAtStartup = (target: string, reason: string, cause: unknown) =>
  new QueueConnectionError(
    `Cannot reach Redis at ${target} (${reason}); the application does not start (startup: 'fail'). ` +
      `Start Redis, fix the connection option, or set startup: 'continue' to start without it and connect in the background`,
    { cause, outcome: 'not-sent' },
  );

/** Policies under which Redis deletes keys when memory is full, and what that does to queued work. */
export function evictionMessage(evicting: { server: string; policy: string }[]): string {
  const where = evicting.map(({ server, policy }) => `${policy} at ${server}`).join(', ');
  return (
    `Redis evicts keys when it reaches maxmemory (maxmemory-policy ${where}). Evicted keys lose queued work silently: ` +
    "a group's messages or a task's payload can go while its index entry stays (or the reverse), so acknowledged " +
    'pushes and schedules are never delivered and stats() drift. ' +
    'Set maxmemory-policy noeviction (CONFIG SET maxmemory-policy noeviction, and in redis.conf): a full Redis then ' +
    'refuses writes with QueueMemoryError and loses nothing'
  );
}

export const evictionRefused = (message: string) =>
  new QueueConfigError(`${message}; the application does not start (evictionPolicy: 'fail')`);

export const scriptsRefused = (reason: string, prefix: string, cause: unknown) =>
  new QueueConfigError(
    `Redis refused the queues' scripts (${reason}); an ACL user needs EVALSHA, EVAL and the commands the ` +
      `scripts call (README: Redis layout), the keys ~${prefix}:* and the channels &${prefix}:*`,
    { cause },
  );

export const subscribeRefused = (channel: string, reason: string, prefix: string, cause: unknown) =>
  new QueueConfigError(
    `Redis refused SUBSCRIBE to "${channel}" (${reason}); an ACL user needs the channels &${prefix}:*`,
    { cause },
  );

export const replicasMissed = (acknowledged: number, replicas: number, timeoutMs: number) =>
  new QueueReplicationError(
    `The write was applied on the primary, but ${acknowledged} of ${replicas} replicas acknowledged it within ` +
      `${timeoutMs} ms (waitForReplicas): it could be lost if the primary fails now`,
    acknowledged,
    replicas,
  );

export const discarded = (transaction: boolean) =>
  new QueueError(`the ${transaction ? 'transaction' : 'pipeline'} was discarded`);

export const redisOutOfMemory = (reason: string, cause: unknown) =>
  new QueueMemoryError(
    `Redis is out of memory and refused the write (${reason}); nothing was applied. ` +
      "Retry once memory is freed (consumers draining the queues), or raise Redis' maxmemory",
    { cause },
  );

/** Why the calls waiting on a command connection that went silent fail (the cause of their QueueConnectionError). */
export const silentConnection = (silentMs: number) =>
  new Error(
    `no reply on the connection for ${Math.round(silentMs / 100) / 10} s; it was dropped and is connecting again`,
  );

export const unreachable = (outcome: QueueCallOutcome, reason: string, cause: unknown) =>
  new QueueConnectionError(
    outcome === 'not-sent'
      ? `Redis could not be reached (${reason}); the call was not sent, so nothing was applied`
      : `Redis did not answer (${reason}); the call may or may not have been applied`,
    { cause, outcome },
  );

export const foreignCursor = (cursor: unknown) =>
  new QueueInputError(
    `cursor "${String(cursor).slice(0, 80)}" is not one this queue returned; start again without a cursor`,
  );

export const unreadableInclude = (script: string, include: string, from: string, cause: unknown) =>
  new QueueError(`Lua script "${script}" includes "${include}" (from "${from}"), which cannot be read`, { cause });

/** A queue's stored record (queue-meta) disagrees with how it is registered now. */
export const metaMismatch = (
  name: string,
  stored: { kind: string; shards: number; layout: number },
  kind: QueueKind,
  shards: number,
  layout: number,
) =>
  new QueueConfigError(
    stored.kind !== kind
      ? `Queue "${name}" already exists in Redis as a ${stored.kind} queue; it cannot be registered as a ${kind} queue`
      : stored.shards !== shards
        ? `Queue "${name}" was created with ${stored.shards} shards but is configured with ${shards}; ` +
          `changing the shard count would strand its data. Keep shards: ${stored.shards}, or drain and delete the queue first`
        : `Queue "${name}" holds data in storage layout ${stored.layout}, written by another version of nestjs-redis-queues; ` +
          `this version reads layout ${layout} (see the CHANGELOG). Drain it with the version that wrote it and delete its keys, or use a new queue name`,
  );

/** Two protocols define the same script (see ScriptSet.define). */
export const duplicateScript = (script: string, first: string, second: string) =>
  new QueueError(
    `Lua script "${script}" is defined twice, in ${first} and in ${second}: give each script its own name`,
  );

/** A script run by a name that no protocol defined (see ScriptSet.define). */
export const unknownScript = (script: string) =>
  new QueueError(
    `No Lua script "${script}" is defined on this connection: a queue kind adds its scripts (Scripts.add) when its store is made`,
  );

/** A call retried within `retryMs` that no try got an answer to (WriteRetries). */
export const retriesRanOut = (
  call: string,
  last: QueueConnectionError,
  outcome: QueueCallOutcome,
  tries: number,
  elapsedMs: number,
  retryMs: number,
) =>
  new QueueConnectionError(
    `${call}: tried ${tries} times over ${elapsedMs} ms (retryMs: ${retryMs}), Redis answered none; ` +
      (outcome === 'not-sent'
        ? 'none was sent, so nothing was applied'
        : 'a try may have reached Redis, so the call may or may not have been applied') +
      `. The last try: ${last.message}`,
    { cause: last.cause, outcome, tries },
  );

/** What Redis answers a try that came after its call's deadline (see the call-keys include). */
export const LATE_TRY =
  "the try reached Redis after its call's window (retryMs + commandTimeoutMs), when Redis no longer knew " +
  'whether an earlier try had been applied, so it wrote nothing';

/** A retried call whose last try was refused as late: an earlier one may have been applied. */
export const lateCall = (call: string, last: QueueConnectionError, tries: number, elapsedMs: number, retryMs: number) =>
  new QueueConnectionError(
    `${call}: tried ${tries} times over ${elapsedMs} ms (retryMs: ${retryMs}); ${LATE_TRY}: ` +
      'the call may or may not have been applied',
    { cause: last, outcome: 'unknown', tries },
  );

/** An include line whose file none of the includes directories has. */
export const includeNotFound = (include: string, dirs: readonly string[]) =>
  new Error(`no ${include}.lua in ${dirs.join(', ')}`);

/** Why a call on a Cluster was given up: no reply within the connection's bound. */
export const noReplyWithin = (ms: number) => `no reply within ${ms} ms`;
