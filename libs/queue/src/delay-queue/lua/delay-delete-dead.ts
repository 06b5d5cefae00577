import { DELAY_QUEUE_SCRIPTS } from './delay-queue.scripts';
import { kindsOf } from '../../redis/script-protocol';

/** Deletes one chunk of a shard's dead letters that died at least `ageMs` ago (see delay-delete-dead.lua): how many. */
export const delayDeleteDead = DELAY_QUEUE_SCRIPTS.define<'delay-delete-dead', { most: number; ageMs: number }, number>(
  {
    script: 'delay-delete-dead',
    keys: (shard) => kindsOf(shard, ['dead', 'data', 'errors', 'runs']),
    args: ({ most, ageMs }) => [most, ageMs],
    decode: (reply) => reply as number,
  },
);
