import type { DelayScript } from '../delay-queue.keys';
import { kindsOf } from '../../redis/script-protocol';

/** Deletes one chunk of a shard's dead letters that died at least `ageMs` ago (see delay-delete-dead.lua): how many. */
export const delayDeleteDead: DelayScript<'delay-delete-dead', { most: number; ageMs: number }, number> = {
  script: 'delay-delete-dead',
  keys: (shard) => kindsOf(shard, ['dead', 'data', 'errors', 'runs']),
  args: ({ most, ageMs }) => [most, ageMs],
  decode: (reply) => reply as number,
};
