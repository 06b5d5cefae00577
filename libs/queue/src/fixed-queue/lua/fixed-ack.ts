import type { FixedScript } from '../fixed-queue.keys';
import { entryCarriers, entryMessages } from '../fixed-entry';
import { kindsOf } from '../../redis/script-protocol';
import type { GroupRateLimitOptions } from '../../interfaces';
import type { ClaimedBatch } from './claim-reply';
import { rateArgs, rateKeys } from './group-rate';

/**
 * The hold of an ordered queue's delivery on its group: the group, and the fencing token its claim took
 * (a call naming a token that lost the group changes nothing).
 */
export interface GroupLease {
  group: string;
  token: string;
}

/** An acknowledgement; with `next`, the group's next batch (if due now) is claimed for the same slot. */
export interface Acknowledged extends GroupLease {
  next?: boolean;
}

export interface FixedAckInput {
  batchSize: number;
  maxWaitMs: number;
  maxAgeMs: number;
  /** '1' at-most-once, '2' at-least-once. */
  mode: string;
  leaseMs: number;
  /** Each next batch's token is this, a dot and its place in the call. */
  tokenBase: string;
  /** Most entries (and about the most bytes) handed out as next batches by one call. */
  maxEntries: number;
  maxBytes: number;
  groupRateLimit?: GroupRateLimitOptions;
  raw: boolean;
  /** The consumer traces: read the next batches' trace carriers too. */
  traced?: boolean;
  deliveries: Acknowledged[];
}

export interface AckReply {
  serverNow: number;
  /** Earliest due time the acknowledgements set (a group ready again), or -1. */
  wakeAt: number;
  /** Per delivery: when its group is due again (-1: it holds nothing more), or null when the delivery was stale. */
  dueAt: (number | null)[];
  /** Per delivery asked for it: the group's next batch, claimed for the slot that just freed. */
  next: (ClaimedBatch | undefined)[];
  /** Per delivery: its group's messages discarded for age on the way (maxAgeMs). */
  expired: number[];
}

/** Finishes deliveries of an ordered queue, handing over next batches (see fixed-ack.lua). */
export const fixedAck: FixedScript<'fixed-ack', FixedAckInput, AckReply> = {
  script: 'fixed-ack',
  // Built with plain loops, not spreads and maps: an acknowledgement call is made for every few
  // deliveries (with batchSize 1, for every one of them).
  keys: (shard, { deliveries, groupRateLimit }) => {
    const keys = kindsOf(shard, ['ready', 'stats', 'lastPush', 'held', 'leases', 'errors', 'pausedGroups']);
    for (const { group } of deliveries) keys.push(shard.group(group));
    if (groupRateLimit)
      keys.push(
        ...rateKeys(
          shard,
          deliveries.map(({ group }) => group),
          groupRateLimit,
        ),
      );
    return keys;
  },
  args: (input) => {
    const args: (string | number)[] = [
      input.batchSize,
      input.maxWaitMs,
      input.maxAgeMs,
      input.mode,
      input.leaseMs,
      input.tokenBase,
      input.maxEntries,
      input.maxBytes,
      ...rateArgs(input.groupRateLimit),
    ];
    for (const { group, token, next } of input.deliveries) args.push(group, token, next ? '1' : '0');
    return args;
  },
  decode: (reply, { deliveries, raw, traced }) => {
    const values = reply as (string | number)[];
    const acked: AckReply = {
      serverNow: values[0] as number,
      wakeAt: values[1] as number,
      dueAt: [],
      next: [],
      expired: [],
    };
    let at = 2;
    for (const { group } of deliveries) {
      const due = values[at] as number;
      const expired = values[at + 1] as number;
      at += 2;
      acked.expired.push(expired);
      if (due === -3) {
        const token = values[at] as string;
        const count = values[at + 1] as number;
        const entries = values.slice(at + 2, at + 2 + count) as string[];
        at += 2 + count;
        acked.dueAt.push(-1);
        acked.next.push({
          group,
          expired,
          token,
          attempt: 1,
          messages: entryMessages(entries, 0, count, raw),
          carriers: traced ? entryCarriers(entries, 0, count) : undefined,
        });
      } else {
        acked.dueAt.push(due === -2 ? null : due);
        acked.next.push(undefined);
      }
    }
    return acked;
  },
};
