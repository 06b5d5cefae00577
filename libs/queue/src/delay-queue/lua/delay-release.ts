import { kindsOf, type ScriptProtocol } from '../../redis/script-protocol';
import type { TaskDelivery } from './delay-ack';

/** Gives a running delivery back (see delay-release.lua): false when the token is stale. */
export const delayRelease: ScriptProtocol<'delay-release', TaskDelivery, boolean> = {
  script: 'delay-release',
  keys: (shard) => kindsOf(shard, ['due', 'active', 'runs']),
  args: ({ id, token }) => [id, token],
  decode: (reply) => reply === 1,
};
