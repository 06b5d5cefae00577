import type { DelayScript } from '../delay-queue.keys';
import { kindsOf } from '../../redis/script-protocol';
import { decodePerDelivery } from '../../redis/lua/per-delivery';
import type { TaskLease } from './delay-ack';

/** Extends leases of running deliveries (see delay-extend.lua): false where lost. */
export const delayExtend: DelayScript<'delay-extend', { leaseMs: number; leases: TaskLease[] }, boolean[]> = {
  script: 'delay-extend',
  keys: (shard) => kindsOf(shard, ['active', 'runs']),
  args: ({ leaseMs, leases }) => [leaseMs, ...leases.flatMap(({ id, token }) => [id, token])],
  decode: decodePerDelivery,
};
