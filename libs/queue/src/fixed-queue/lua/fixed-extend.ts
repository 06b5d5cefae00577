import type { FixedScript } from '../fixed-queue.keys';
import { kindsOf } from '../../redis/script-protocol';
import { decodePerDelivery } from '../../redis/lua/per-delivery';
import type { GroupLease } from './fixed-ack';

export interface FixedExtendInput {
  leaseMs: number;
  leases: GroupLease[];
}

/** Extends leases of running deliveries (see fixed-extend.lua): false where the lease was lost. */
export const fixedExtend: FixedScript<'fixed-extend', FixedExtendInput, boolean[]> = {
  script: 'fixed-extend',
  keys: (shard) => kindsOf(shard, ['held', 'leases']),
  args: ({ leaseMs, leases }) => [leaseMs, ...leases.flatMap(({ group, token }) => [group, token])],
  decode: decodePerDelivery,
};
