import type { FixedScript } from '../fixed-queue.keys';
import { callKeysOf, kindsOf, type ShardKeys } from '../../redis/script-protocol';
import type { CallKey } from '../../redis/call-keys';

export interface GroupPush {
  group: string;
  /** Its messages in order: a lone one as itself (most visits bring one: no array to hold), or several. */
  messages: string | string[];
  /** A push that may reach Redis more than once: the visit is that push alone, applied once. */
  call?: CallKey;
}

/** How many messages a group's visit brings. */
export function messageCount(messages: string | string[]): number {
  return typeof messages === 'string' ? 1 : messages.length;
}

export interface FixedPushInput {
  capacity: number;
  batchSize: number;
  maxWaitMs: number;
  /** '0' unordered, '1' ordered at-most-once, '2' ordered at-least-once. */
  mode: string;
  /** A trace carrier stored with every message that carries none (traced queues), or ''. */
  carrier: string;
  groups: GroupPush[];
}

export interface PushReply {
  serverNow: number;
  /** Earliest due time this call made earlier (a consumer may want waking), or -1. */
  wakeAt: number;
  /** Evicted messages per group, in the order given. */
  evicted: number[];
  /** The groups' positions (from 0) whose visit was a late try of its call, which wrote nothing (see the call-keys include). */
  late?: number[];
}

/** Appends messages to groups of one shard (see fixed-push.lua). */
export const fixedPush: FixedScript<'fixed-push', FixedPushInput, PushReply> = {
  script: 'fixed-push',
  keys: (shard, { groups }) => {
    const keys = [
      ...kindsOf(shard, ['ready', 'stats', 'lastPush', 'held', 'pausedGroups']),
      ...groups.map(({ group }) => shard.group(group)),
    ];
    const calls = keyedCalls(shard, groups);
    return calls === undefined ? keys : [...keys, ...calls.keys];
  },
  args: ({ capacity, batchSize, maxWaitMs, mode, carrier, groups }, shard) => {
    const args = [
      capacity,
      batchSize,
      maxWaitMs,
      mode,
      // Where a list key's group name starts: the script cuts it out only when the indexes need it.
      shard.group('').length,
      carrier,
      ...groups.map(({ messages }) =>
        typeof messages === 'string' ? messages : messages.length === 1 ? messages[0] : '\n' + messages.join('\n'),
      ),
    ];
    const calls = keyedCalls(shard, groups);
    return calls === undefined ? args : [...args, ...calls.args];
  },
  decode: (reply, { groups }) => {
    const [serverNow, wakeAt, ...lost] = reply as number[];
    const evicted = new Array<number>(groups.length).fill(0);
    let late: number[] | undefined;
    for (let i = 0; i < lost.length; i += 2) {
      if (lost[i + 1] < 0) (late ??= []).push(lost[i] - 1);
      else evicted[lost[i] - 1] = lost[i + 1];
    }
    return late === undefined ? { serverNow, wakeAt, evicted } : { serverNow, wakeAt, evicted, late };
  },
};

/** The call-keys section of a call with keyed pushes; the usual call has none, and pays one look per group. */
function keyedCalls(shard: ShardKeys, groups: GroupPush[]) {
  for (const { call } of groups)
    if (call !== undefined)
      return callKeysOf(
        shard,
        groups.map((group) => group.call),
      );
  return undefined;
}
