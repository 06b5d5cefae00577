import type { Scripts } from '../redis/scripts';
import type { QueueKeys } from '../redis/keys';
import type { FixedQueueOptionsRules } from '../validation/queue-options';
import type { FixedQueueStats, GroupSummary } from '../interfaces';

export interface GroupPush {
  group: string;
  messages: string[];
}

export interface PushOutcome {
  serverNow: number;
  /** Earliest due time this call made earlier (a consumer may want waking), or -1. */
  wakeAt: number;
  /** Evicted messages per group, in the order given. */
  evicted: number[];
}

export interface ClaimedBatch {
  group: string;
  expired: number;
  messages: unknown[];
}

export interface TakeOutcome {
  serverNow: number;
  /** Next due time of the shard (server ms): `serverNow` when some group is due already, Infinity when empty. */
  nextDueAt: number;
  /** Groups due now: the candidates of the next call. */
  due: string[];
  batches: ClaimedBatch[];
}

/** The Redis side of a FixedQueue: key names, script arguments and reply decoding, nothing else. */
export class FixedQueueStore {
  constructor(
    private readonly scripts: Scripts,
    readonly keys: QueueKeys,
    private readonly options: FixedQueueOptionsRules,
  ) {}

  groupKey(shard: number, group: string): string {
    return this.keys.member(shard, 'g', group);
  }

  async push(shard: number, groups: GroupPush[]): Promise<PushOutcome> {
    const { capacity, batchSize, maxWaitMs, ttlMs } = this.options;
    const keys = [this.keys.key(shard, 'ready'), this.keys.key(shard, 'stats'), this.keys.key(shard, 'lens')];
    const args: (string | number)[] = [capacity, batchSize, maxWaitMs, ttlMs];
    for (const { group, messages } of groups) {
      keys.push(this.groupKey(shard, group));
      args.push(group, messages.length, messages.length === 1 ? messages[0] : messages.join('\n'));
    }
    const { waitForReplicas } = this.options;
    const reply = waitForReplicas
      ? await this.scripts.runReplicated<number[]>('fixed-push', keys, args, waitForReplicas)
      : await this.scripts.runNow<number[]>('fixed-push', keys, args);
    return { serverNow: reply[0], wakeAt: reply[1], evicted: reply.slice(2) };
  }

  /**
   * Claims up to `limit` batches from `candidates` (groups an earlier call listed as due; re-checked
   * here), and lists the groups due now as the candidates of the next call: one round trip per poll.
   */
  async take(shard: number, limit: number, candidates: string[], raw = false): Promise<TakeOutcome> {
    const { batchSize, maxAgeMs, maxWaitMs } = this.options;
    const keys = [this.keys.key(shard, 'ready'), this.keys.key(shard, 'stats'), this.keys.key(shard, 'lens')];
    const args: (string | number)[] = [batchSize, maxAgeMs ?? 0, maxWaitMs, limit];
    if (candidates.length === 0)
      return decodeTake(await this.scripts.run('fixed-take', keys, args), [], batchSize, raw);
    // With fewer candidates than room, each may give several batches.
    const read = batchSize * Math.max(1, Math.floor(limit / candidates.length));
    const reads = candidates.map((group) => {
      const key = this.groupKey(shard, group);
      keys.push(key);
      args.push(group, read);
      return { key, count: read };
    });
    const { lists, result } = await this.scripts.runAfterReads<TakeReply>('fixed-take', keys, args, reads);
    return decodeTake(
      result,
      candidates.map((group, i) => ({ group, entries: lists[i] })),
      batchSize,
      raw,
    );
  }

  size(shard: number, group: string): Promise<number> {
    return this.scripts.call((client) => client.llen(this.groupKey(shard, group)));
  }

  /** The first `perShard` groups of each shard's ready index (the due-soonest: full groups are due now) with their sizes. */
  async readyHeads(perShard: number): Promise<GroupSummary[]> {
    const shards = await Promise.all(
      Array.from({ length: this.options.shards }, async (_, shard) => {
        const heads = await this.scripts.call((client) =>
          client.zrange(this.keys.key(shard, 'ready'), 0, perShard - 1, 'WITHSCORES'),
        );
        return Promise.all(
          Array.from({ length: heads.length / 2 }, async (_, i): Promise<GroupSummary> => {
            const group = heads[2 * i];
            return { group, size: await this.size(shard, group), dueAt: Number(heads[2 * i + 1]) };
          }),
        );
      }),
    );
    return shards.flat();
  }

  async stats(): Promise<FixedQueueStats> {
    const total: FixedQueueStats = {
      groups: 0,
      pending: 0,
      pushed: 0,
      dropped: 0,
      expired: 0,
      delivered: 0,
      nextDueAt: null,
      lagMs: 0,
    };
    const shards = await Promise.all(
      Array.from({ length: this.options.shards }, (_, shard) =>
        this.scripts.run<number[]>('fixed-stats', [this.keys.key(shard, 'ready'), this.keys.key(shard, 'stats')], []),
      ),
    );
    for (const [groups, pending, pushed, dropped, expired, delivered, nextDue, now] of shards) {
      total.groups += groups;
      total.pending += pending;
      total.pushed += pushed;
      total.dropped += dropped;
      total.expired += expired;
      total.delivered += delivered;
      if (nextDue >= 0 && (total.nextDueAt === null || nextDue < total.nextDueAt)) total.nextDueAt = nextDue;
      if (nextDue >= 0) total.lagMs = Math.max(total.lagMs, now - nextDue);
    }
    return total;
  }
}

type TakeReply = (number | string)[];

/** @internal Exported for its unit spec. */
export function decodeTake(
  reply: TakeReply,
  read: { group: string; entries: string[] }[],
  batchSize: number,
  raw: boolean,
): TakeOutcome {
  const listedEnd = 3 + (reply[2] as number);
  const batches: ClaimedBatch[] = [];
  for (let i = 0; i < read.length; i++) {
    const at = listedEnd + 3 * i;
    const offset = reply[at] as number;
    const end = offset + (reply[at + 2] as number);
    const { group, entries } = read[i];
    // Every message was discarded for age: no batch to handle, but the caller learns how many.
    if (end === offset && (reply[at + 1] as number) > 0)
      batches.push({ group, expired: reply[at + 1] as number, messages: [] });
    for (let from = offset; from < end; from += batchSize) {
      batches.push({
        group,
        expired: from === offset ? (reply[at + 1] as number) : 0,
        messages: decodeEntries(entries, from, Math.min(end, from + batchSize), raw),
      });
    }
  }
  return {
    serverNow: reply[0] as number,
    nextDueAt: reply[1] === -1 ? Infinity : (reply[1] as number),
    due: reply.slice(3, listedEnd) as string[],
    batches,
  };
}

/**
 * Entries are `[<server ms>,<json>]`; the message is what lies between the first comma and the last
 * bracket. Parsing each message alone measured faster than one JSON.parse of the joined batch.
 */
function decodeEntries(entries: string[], from: number, to: number, raw: boolean): unknown[] {
  const messages = new Array<unknown>(to - from);
  for (let i = from; i < to; i++) {
    const entry = entries[i];
    const json = entry.slice(entry.indexOf(',') + 1, -1);
    messages[i - from] = raw ? json : JSON.parse(json);
  }
  return messages;
}
