import { kindsOf, type ScriptProtocol } from '../script-protocol';

/** A delivery of an ordered queue, as acknowledgements and heartbeats name it. */
export interface Delivery {
  group: string;
  token: string;
}

export interface FixedAckInput {
  batchSize: number;
  maxWaitMs: number;
  deliveries: Delivery[];
}

export interface AckOutcome {
  serverNow: number;
  /** Earliest due time the acknowledgements set (a group ready again), or -1. */
  wakeAt: number;
  /** Per delivery: when its group is due again (-1: it holds nothing more), or null when the delivery was stale. */
  dueAt: (number | null)[];
}

/** Finishes deliveries of an ordered queue (see fixed-ack.lua). */
export const fixedAck: ScriptProtocol<FixedAckInput, AckOutcome> = {
  script: 'fixed-ack',
  keys: (shard, { deliveries }) => [
    ...kindsOf(shard, ['ready', 'stats', 'lastPush', 'held', 'leases', 'errors']),
    ...deliveries.map(({ group }) => shard.group(group)),
  ],
  args: ({ batchSize, maxWaitMs, deliveries }) => [
    batchSize,
    maxWaitMs,
    ...deliveries.flatMap(({ group, token }) => [group, token]),
  ],
  decode: (reply) => {
    const [serverNow, wakeAt, ...dueAt] = reply as number[];
    return { serverNow, wakeAt, dueAt: dueAt.map((due) => (due === -2 ? null : due)) };
  },
};
