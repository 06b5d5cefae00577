import { kindsOf, type ScriptProtocol } from '../../redis/script-protocol';

/** A delivery of a task, as acknowledgements and heartbeats name it. */
export interface TaskDelivery {
  id: string;
  token: string;
}

/**
 * Completes deliveries (see delay-ack.lua): true for each that completed its task (or whose task was
 * replaced meanwhile: its work is done all the same), false where stale.
 */
export const delayAck: ScriptProtocol<'delay-ack', TaskDelivery[], boolean[]> = {
  script: 'delay-ack',
  keys: (shard) => kindsOf(shard, ['due', 'active', 'data', 'stats', 'errors', 'runs']),
  args: (deliveries) => deliveries.flatMap(({ id, token }) => [id, token]),
  decode: (reply) => (reply as number[]).map((completed) => completed !== 0),
};
