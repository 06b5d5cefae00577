import type { DelayScript } from '../delay-queue.keys';
import { kindsOf } from '../../redis/script-protocol';
import type { TaskLease } from './delay-ack';

/** A delivery shutdown gives back: whether its attempt counts, and the error recorded if it does. */
export interface GivenBackTask extends TaskLease {
  counted: boolean;
  error: string;
  /** A counted give-back short of it is a retry (`stats().retried`). */
  maxAttempts: number;
}

/** Gives a running delivery back (see delay-release.lua): false when the token is stale. */
export const delayRelease: DelayScript<'delay-release', GivenBackTask, boolean> = {
  script: 'delay-release',
  keys: (shard) => kindsOf(shard, ['due', 'active', 'runs', 'stats', 'errors', 'successors']),
  args: ({ id, token, counted, error, maxAttempts }) => [id, token, counted ? '1' : '0', error, maxAttempts],
  decode: (reply) => reply === 1,
};
