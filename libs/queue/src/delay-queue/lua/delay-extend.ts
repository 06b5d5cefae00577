import { DELAY_QUEUE_SCRIPTS } from './delay-queue.scripts';
import { kindsOf } from '../../redis/script-protocol';
import { decodePerDelivery } from '../../redis/lua/per-delivery';
import type { TaskDelivery } from './delay-ack';

/** Extends leases of running deliveries (see delay-extend.lua): false where lost. */
export const delayExtend = DELAY_QUEUE_SCRIPTS.define<
  'delay-extend',
  { leaseMs: number; deliveries: TaskDelivery[] },
  boolean[]
>({
  script: 'delay-extend',
  keys: (shard) => kindsOf(shard, ['active', 'runs']),
  args: ({ leaseMs, deliveries }) => [leaseMs, ...deliveries.flatMap(({ id, token }) => [id, token])],
  decode: decodePerDelivery,
});
