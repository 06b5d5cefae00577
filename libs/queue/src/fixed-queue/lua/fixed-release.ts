import { kindsOf, type ScriptProtocol } from '../../redis/script-protocol';
import type { Delivery } from './fixed-ack';

/** Gives unfinished deliveries back (see fixed-release.lua): true for each given back, false where stale. */
export const fixedRelease: ScriptProtocol<'fixed-release', Delivery[], boolean[]> = {
  script: 'fixed-release',
  keys: (shard) => kindsOf(shard, ['ready', 'held', 'leases', 'pausedGroups']),
  args: (deliveries) => deliveries.flatMap(({ group, token }) => [group, token]),
  decode: (reply) => (reply as number[]).map((done) => done === 1),
};
