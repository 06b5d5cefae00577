import { createHash, randomBytes } from 'node:crypto';
import { QueueConnectionError } from '../errors';
import { LATE_TRY } from './redis.messages';
import type { ServerClock } from './server-clock';

/**
 * Retried calls' keys: this process' random part and a count. Unique across processes as random keys
 * are, at a fraction of the cost of drawing random bytes per call (a retried push is a hot path).
 */
const PROCESS_PART = randomBytes(12).toString('base64url');
let calls = 0;

/**
 * How long Redis remembers a call made with an `idempotencyKey`, at least: the application's own
 * retries of it, from any process, within this time are answered with the first one's result.
 */
export const IDEMPOTENCY_WINDOW_MS = 600_000;

/** What makes a write applied at most once however many of its tries reach Redis (see the call-keys include). */
export interface CallKey {
  /** Names the call's record in its shard. */
  readonly name: string;
  /** How long Redis keeps the record after the try it applied. */
  readonly windowMs: number;
  /**
   * A retried call's: Redis' time after which a try that finds no record is refused as late (see the
   * call-keys include). None for an application's idempotency key, whose calls may come at any time.
   */
  readonly deadline?: number;
}

/**
 * A try Redis refused: it came after its call's deadline and found no record of the call, so an earlier
 * try may have been applied (see the call-keys include). No later try can tell more: retries end with it.
 */
export class LateTry extends QueueConnectionError {
  constructor() {
    super(LATE_TRY, { outcome: 'unknown' });
  }
}

/**
 * The call key of a write, or none when it can reach Redis only once (no retry, no idempotency key): such
 * a call is sent as it was before call keys, at the same cost. A retried call's key is unique, and kept
 * while any of its tries is awaited: `retryMs` after the call began, plus one `commandTimeoutMs` for the
 * last try; a try that comes later (held on its way, or Redis' clock jumped) is refused as late, from the
 * call's deadline: now by `clock` (this process' estimate of Redis' clock, a lower bound) plus that
 * window. Until the process has heard from Redis its estimate is its own clock: such a call has none.
 * An application's key names the call within the queue, the operation and what it addresses (the group,
 * the task), so that one key given to two different calls does not merge them.
 */
export function callKey(
  operation: string,
  target: string,
  retryMs: number,
  commandTimeoutMs: number,
  idempotencyKey: string | undefined,
  clock: Pick<ServerClock, 'known' | 'estimate'>,
): CallKey | undefined {
  const retryWindowMs = retryMs + commandTimeoutMs;
  if (idempotencyKey === undefined) {
    if (retryMs <= 0) return undefined;
    const name = PROCESS_PART + (calls++).toString(36);
    return clock.known
      ? { name, windowMs: retryWindowMs, deadline: Math.floor(clock.estimate()) + retryWindowMs }
      : { name, windowMs: retryWindowMs };
  }
  return {
    // 128 bits of the digest: as unlikely to collide as a random key, and a short key name in Redis.
    name: digest(`${operation}\0${target}\0${idempotencyKey}`).toString('base64url').slice(0, 22),
    windowMs: Math.max(IDEMPOTENCY_WINDOW_MS, retryWindowMs),
  };
}

/**
 * The id of a task scheduled without one but with an idempotency key: the same in every process, so that
 * every try of the call addresses the same shard, where its record is. UUID-shaped (version 8: made up).
 */
export function idFromKey(idempotencyKey: string): string {
  const hex = digest(`id\0${idempotencyKey}`).toString('hex');
  const variant = ((parseInt(hex[16], 16) & 0x3) | 0x8).toString(16);
  return `${hex.slice(0, 8)}-${hex.slice(8, 12)}-8${hex.slice(13, 16)}-${variant}${hex.slice(17, 20)}-${hex.slice(20, 32)}`;
}

function digest(text: string): Buffer {
  return createHash('sha256').update(text).digest();
}
