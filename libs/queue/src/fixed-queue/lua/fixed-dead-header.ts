import type { FixedScript } from '../fixed-queue.keys';
import { kindsOf } from '../../redis/script-protocol';
import type { DeadHeader } from './fixed-dead';

/** The header of a dead batch by id, or null when there is none (see fixed-dead-header.lua). */
export const fixedDeadHeader: FixedScript<'fixed-dead-header', string, DeadHeader | null> = {
  script: 'fixed-dead-header',
  keys: (shard) => kindsOf(shard, ['deadData']),
  args: (id) => [id],
  decode: (reply) => (reply === null ? null : (JSON.parse(reply as string) as DeadHeader)),
};
