import { fencingToken } from '../redis/fencing-token';
import { readNewestFirst } from '../redis/newest-first';
import { ENTRIES_PER_POLL, GROUPS_PER_POLL, inChunks, PollBudget, type PollPlan } from '../redis/poll-budget';
import type { Scripts } from '../redis/scripts';
import type { QueueKeys, ShardKeyKind } from '../redis/keys';
import { zscore, type Scored } from '../redis/score-pages';
import type { FixedQueueOptionsRules } from '../validation/queue-options';
import type { DeadBatch, FixedQueueStats, GroupListing, GroupSummary } from '../interfaces';

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
  /** Ordered queues: the delivery's fencing token (it holds the group until acknowledged). */
  token?: string;
  /** Ordered queues: delivery number of these messages, from 1. */
  attempt: number;
}

/** A delivery of an ordered queue, as acknowledgements and heartbeats name it. */
export interface Delivery {
  group: string;
  token: string;
}

export interface AckOutcome {
  serverNow: number;
  /** Earliest due time the acknowledgements set (a group ready again), or -1. */
  wakeAt: number;
  /** Per delivery: when its group is due again (-1: it holds nothing more), or null when the delivery was stale. */
  dueAt: (number | null)[];
}

export type FailOutcome = { outcome: 'retry' | 'dead' | 'gone' | 'stale'; at: number };

/** A dead batch as stored: its entries still carry their push times. */
export type DeadRecord = Omit<DeadBatch, 'messages' | 'pushedAt'> & { entries: string[] };

/** What a dead batch's record says before its messages. */
interface DeadHeader {
  group: string;
  attempts: number;
  error: string;
  diedAt: number;
}

/** Dead batches read per script call: each holds up to batchSize messages. */
const DEAD_BATCHES_PER_CALL = 20;

/**
 * Bounds on one call of `obliterate`: groups whose lists it deletes, and the entries they may hold
 * (lists are freed in Redis' own thread unless large, so their size counts too). Measured (SLOWLOG):
 * see the README's Guarantees.
 */
const OBLITERATE_GROUPS_PER_CALL = 500;
const OBLITERATE_ENTRIES_PER_CALL = 50_000;

/** Leases extended or given back per script call: a few lookups each, for up to `concurrency` deliveries. */
const LEASES_PER_CALL = 500;

/** Every key of a shard but the groups' lists: `lastPush` first, as fixed-obliterate expects. */
const SHARD_KINDS: ShardKeyKind[] = ['lastPush', 'ready', 'stats', 'held', 'leases', 'dead', 'deadData', 'errors'];

/** What `push` and the claim scripts call the ordered modes (ARGV). */
const MODES = { unordered: '0', atMostOnce: '1', atLeastOnce: '2' } as const;

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
  ) {
    if (!options.ordered) this.mode = MODES.unordered;
    else this.mode = options.delivery === 'at-least-once' ? MODES.atLeastOnce : MODES.atMostOnce;
    this.budget = new PollBudget(options.batchSize);
  }

  private readonly budget: PollBudget;

  get ordered(): boolean {
    return this.mode !== MODES.unordered;
  }

  private k(shard: number, ...kinds: ShardKeyKind[]): string[] {
    return kinds.map((kind) => this.keys.key(shard, kind));
  }

  groupKey(shard: number, group: string): string {
    return this.keys.member(shard, 'g', group);
  }

  private readonly mode: string;

  async push(shard: number, groups: GroupPush[]): Promise<PushOutcome> {
    const { capacity, batchSize, maxWaitMs } = this.options;
    const keys = this.k(shard, 'ready', 'stats', 'lastPush', 'held');
    const args: (string | number)[] = [capacity, batchSize, maxWaitMs, this.mode, this.groupKey(shard, '').length];
    for (const { group, messages } of groups) {
      keys.push(this.groupKey(shard, group));
      args.push(messages.length === 1 ? messages[0] : '\n' + messages.join('\n'));
    }
    const { waitForReplicas } = this.options;
    const reply = waitForReplicas
      ? await this.scripts.runReplicated<number[]>('fixed-push', keys, args, waitForReplicas)
      : await this.scripts.runNow<number[]>('fixed-push', keys, args);
    const evicted = new Array<number>(groups.length).fill(0);
    for (let i = 2; i < reply.length; i += 2) evicted[reply[i] - 1] = reply[i + 1];
    return { serverNow: reply[0], wakeAt: reply[1], evicted };
  }

  /**
   * Claims up to `limit` batches from `candidates` (groups an earlier call listed as due; re-checked
   * here), and lists the groups due now as the candidates of the next call: one round trip per poll.
   * One call handles a bounded share of that (`PollBudget`); the shard then stays due (`nextDueAt` is
   * `serverNow`), so a caller with more room polls again at once.
   */
  async take(shard: number, limit: number, listed: string[], raw = false): Promise<TakeOutcome> {
    const plan = this.budget.plan(limit);
    // Never more than the plan's batches are claimed: reading more heads would be work for nothing.
    const candidates = listed.length > plan.batches ? listed.slice(0, plan.batches) : listed;
    if (this.ordered) return this.claim(shard, plan, candidates, raw);
    const { batchSize, maxAgeMs, maxWaitMs } = this.options;
    const keys = this.k(shard, 'ready', 'stats', 'lastPush');
    const args: (string | number)[] = [batchSize, maxAgeMs ?? 0, maxWaitMs, plan.batches];
    if (candidates.length === 0)
      return decodeTake(await this.scripts.run('fixed-take', keys, args), [], batchSize, raw);
    // With fewer candidates than room, each may give several batches.
    const read = plan.perBatch * Math.max(1, Math.floor(plan.batches / candidates.length));
    const reads = candidates.map((group) => {
      const key = this.groupKey(shard, group);
      keys.push(key);
      args.push(group, read);
      return { key, count: read };
    });
    const { lists, result } = await this.scripts.runAfterReads<TakeReply>('fixed-take', keys, args, reads);
    this.budget.observe(lists);
    return decodeTake(
      result,
      candidates.map((group, i) => ({ group, entries: lists[i] })),
      batchSize,
      raw,
    );
  }

  /**
   * `take` for ordered queues: one batch per group at most, the group held by a token until `ack`
   * (or `fail`/`release`, or its lease running out).
   */
  private async claim(shard: number, plan: PollPlan, candidates: string[], raw: boolean): Promise<TakeOutcome> {
    const { batchSize, maxAgeMs, maxWaitMs, leaseMs, maxAttempts, deadLetter } = this.options;
    const keys = this.k(shard, 'ready', 'stats', 'lastPush', 'held', 'leases', 'dead', 'deadData', 'errors');
    // The script appends each delivery's place in the call; the shard leads so that a dead batch's id
    // (its last delivery's token) says where to find it.
    const base = `${shard}.${fencingToken()}`;
    const args: (string | number)[] = [
      batchSize,
      maxAgeMs ?? 0,
      maxWaitMs,
      plan.batches,
      this.mode,
      leaseMs,
      maxAttempts,
      deadLetter.capacity,
      base,
    ];
    if (candidates.length === 0) return decodeClaim(await this.scripts.run('fixed-claim', keys, args), [], raw);
    const reads = candidates.map((group) => {
      const key = this.groupKey(shard, group);
      keys.push(key);
      args.push(group, plan.perBatch);
      return { key, count: plan.perBatch };
    });
    const { lists, result } = await this.scripts.runAfterReads<TakeReply>('fixed-claim', keys, args, reads);
    this.budget.observe(lists);
    return decodeClaim(
      result,
      candidates.map((group, i) => ({ group, entries: lists[i] })),
      raw,
    );
  }

  /** Finishes deliveries of an ordered queue; a stale one (its token lost the group) changes nothing. */
  async ack(shard: number, deliveries: Delivery[]): Promise<AckOutcome> {
    const keys = this.k(shard, 'ready', 'stats', 'lastPush', 'held', 'leases', 'errors');
    const outcomes = await inChunks(deliveries, this.acksPerCall(), async (chunk) => {
      const args: (string | number)[] = [this.options.batchSize, this.options.maxWaitMs];
      const chunkKeys = [...keys];
      for (const { group, token } of chunk) {
        chunkKeys.push(this.groupKey(shard, group));
        args.push(group, token);
      }
      const reply = await this.scripts.run<number[]>('fixed-ack', chunkKeys, args);
      return [{ serverNow: reply[0], wakeAt: reply[1], dueAt: reply.slice(2).map((due) => (due === -2 ? null : due)) }];
    });
    return outcomes.reduce((all, outcome) => ({
      serverNow: Math.max(all.serverNow, outcome.serverNow),
      wakeAt: all.wakeAt < 0 || (outcome.wakeAt >= 0 && outcome.wakeAt < all.wakeAt) ? outcome.wakeAt : all.wakeAt,
      dueAt: [...all.dueAt, ...outcome.dueAt],
    }));
  }

  /**
   * Deliveries one acknowledgement call finishes: at-least-once, each trims the entries it owns (a
   * batch at most), so their number is bounded like a poll's reads.
   */
  private acksPerCall(): number {
    if (this.mode !== MODES.atLeastOnce) return GROUPS_PER_POLL;
    return Math.max(1, Math.min(GROUPS_PER_POLL, Math.floor(ENTRIES_PER_POLL / this.options.batchSize)));
  }

  /** At-least-once: a failed delivery is retried after `delayMs`, or dead-lettered after its last attempt. */
  async fail(shard: number, delivery: Delivery, delayMs: number, error: string): Promise<FailOutcome> {
    const { batchSize, maxWaitMs, maxAttempts, deadLetter } = this.options;
    const keys = [
      ...this.k(shard, 'ready', 'stats', 'lastPush', 'held', 'leases', 'dead', 'deadData', 'errors'),
      this.groupKey(shard, delivery.group),
    ];
    const args = [
      batchSize,
      maxWaitMs,
      delivery.group,
      delivery.token,
      delayMs,
      maxAttempts,
      deadLetter.capacity,
      error,
    ];
    const [outcome, at] = await this.scripts.run<[FailOutcome['outcome'], number]>('fixed-fail', keys, args);
    return { outcome, at };
  }

  /** At-least-once, at shutdown: unfinished deliveries are due again at once, not counted as attempts. */
  async release(shard: number, deliveries: Delivery[]): Promise<boolean[]> {
    const keys = this.k(shard, 'ready', 'held', 'leases');
    return inChunks(deliveries, LEASES_PER_CALL, async (chunk) => {
      const args = chunk.flatMap(({ group, token }) => [group, token]);
      const reply = await this.scripts.run<number[]>('fixed-release', keys, args);
      return reply.map((done) => done === 1);
    });
  }

  /** Heartbeat: extends the leases of running deliveries; false where the lease was lost. */
  async extend(shard: number, deliveries: Delivery[]): Promise<boolean[]> {
    const keys = this.k(shard, 'held', 'leases');
    return inChunks(deliveries, LEASES_PER_CALL, async (chunk) => {
      const args: (string | number)[] = [this.options.leaseMs];
      for (const { group, token } of chunk) args.push(group, token);
      const reply = await this.scripts.run<number[]>('fixed-extend', keys, args);
      return reply.map((held) => held === 1);
    });
  }

  /** The newest `limit` dead batches of a shard, a page of at most DEAD_BATCHES_PER_CALL per script call. */
  async dead(shard: number, limit: number): Promise<DeadRecord[]> {
    return readNewestFirst(limit, DEAD_BATCHES_PER_CALL, async (count, latest, listedAtLatest) => {
      const reply = await this.scripts.run<(string | null)[]>('fixed-dead', this.k(shard, 'dead', 'deadData'), [
        count,
        latest,
        listedAtLatest,
      ]);
      const items: DeadRecord[] = [];
      for (let i = 0; i < reply.length; i += 2) {
        const stored = reply[i + 1];
        // Trimmed (capacity) between the two reads of the script: nothing left to show.
        if (stored !== null) items.push(parseDeadRecord(reply[i]!, stored));
      }
      return { items, listed: reply.length / 2 };
    });
  }

  /** Appends a dead batch's messages to its group again. Null when no such dead batch exists. */
  async requeue(shard: number, id: string): Promise<{ dropped: number; wakeAt: number } | null> {
    const header = await this.scripts.run<string | null>('fixed-dead-header', this.k(shard, 'deadData'), [id]);
    if (header === null) return null;
    const { group } = JSON.parse(header) as DeadHeader;
    const { capacity, batchSize, maxWaitMs } = this.options;
    const keys = [
      ...this.k(shard, 'ready', 'stats', 'lastPush', 'held', 'dead', 'deadData'),
      this.groupKey(shard, group),
    ];
    const reply = await this.scripts.run<number[]>('fixed-requeue', keys, [id, group, capacity, batchSize, maxWaitMs]);
    return reply[0] === 1 ? { dropped: reply[1], wakeAt: reply[2] } : null;
  }

  /** Deletes a group's messages (counted as dropped); returns how many. A delivery of it under way finishes harmlessly. */
  clear(shard: number, group: string): Promise<number> {
    const keys = [...this.k(shard, 'ready', 'stats', 'lastPush', 'held', 'errors'), this.groupKey(shard, group)];
    return this.scripts.runNow<number>('fixed-clear', keys, [group]);
  }

  /**
   * Converts a shard written by an earlier version: its lists lose their TTL and join the last-push
   * index, a bounded page of groups per call. A shard with nothing to convert costs one short call.
   */
  async upgrade(shard: number): Promise<void> {
    let page: string[] = [];
    do {
      const keys = [...this.k(shard, 'lens', 'lastPush', 'stats'), ...page.map((group) => this.groupKey(shard, group))];
      page = await this.scripts.run<string[]>('fixed-upgrade', keys, [OBLITERATE_GROUPS_PER_CALL, ...page]);
    } while (page.length > 0);
  }

  /** Deletes every key of a shard, groups' lists included, a bounded page of groups per script call. */
  async obliterate(shard: number): Promise<void> {
    const own = this.k(shard, ...SHARD_KINDS);
    let page: string[] = [];
    do {
      const keys = [...own, ...page.map((group) => this.groupKey(shard, group))];
      page = await this.scripts.run<string[]>('fixed-obliterate', keys, [
        own.length,
        // A list holds `capacity` entries at most.
        Math.max(
          1,
          Math.min(OBLITERATE_GROUPS_PER_CALL, Math.floor(OBLITERATE_ENTRIES_PER_CALL / this.options.capacity)),
        ),
        ...page,
      ]);
    } while (page.length > 0);
  }

  /** The first `count` entries of a group's list, oldest first. */
  head(shard: number, group: string, count: number): Promise<string[]> {
    return this.scripts.call((client) => client.lrange(this.groupKey(shard, group), 0, count - 1));
  }

  /** One ZSCAN step over a shard's groups (the last-push index), with their sizes: the next scan cursor and the groups holding messages. */
  async scanGroups(shard: number, scan: string, count: number): Promise<[string, GroupListing[]]> {
    const [next, flat] = await this.scripts.call((client) =>
      client.zscan(this.keys.key(shard, 'lastPush'), scan, 'COUNT', count),
    );
    const groups = flat.filter((_, i) => i % 2 === 0);
    const sizes = await Promise.all(
      groups.map((group) => this.scripts.call((client) => client.llen(this.groupKey(shard, group)))),
    );
    return [next, groups.map((group, i) => ({ group, size: sizes[i] })).filter(({ size }) => size > 0)];
  }

  /** Up to `count` groups of a shard that nobody may have pushed to for ttlMs: the candidates of `expire`. */
  idleGroups(shard: number, count: number): Promise<string[]> {
    return this.scripts.run<string[]>('fixed-idle', this.k(shard, 'lastPush'), [this.options.ttlMs, count]);
  }

  /** Deletes the listed groups whose newest message is older than ttlMs (counted expired): how many each lost. */
  async expire(shard: number, groups: string[]): Promise<{ serverNow: number; expired: number[] }> {
    const keys = [
      ...this.k(shard, 'ready', 'stats', 'lastPush', 'held'),
      ...groups.map((group) => this.groupKey(shard, group)),
    ];
    const reply = await this.scripts.run<number[]>('fixed-expire', keys, [this.options.ttlMs, ...groups]);
    return { serverNow: reply[0], expired: reply.slice(1) };
  }

  /** Up to `count` dead batch ids of a shard with their death times, down from `score`, past the first `skip` at exactly that time. */
  async deadRange(shard: number, score: number, skip: number, count: number): Promise<Scored[]> {
    const reply = await this.scripts.call((client) =>
      client.zrange(
        this.keys.key(shard, 'dead'),
        zscore(score),
        '-inf',
        'BYSCORE',
        'REV',
        'LIMIT',
        skip,
        count,
        'WITHSCORES',
      ),
    );
    const entries: Scored[] = [];
    for (let i = 0; i < reply.length; i += 2) entries.push({ shard, member: reply[i], score: Number(reply[i + 1]) });
    return entries;
  }

  /** Dead batches of a shard by id; null where one is gone (re-queued, trimmed). */
  async deadRecords(shard: number, ids: string[]): Promise<(DeadRecord | null)[]> {
    const stored: (string | null)[] = [];
    // A few at a time, as `dead` pages them: one HMGET of a thousand batches would hold Redis for long.
    for (let from = 0; from < ids.length; from += DEAD_BATCHES_PER_CALL) {
      const slice = ids.slice(from, from + DEAD_BATCHES_PER_CALL);
      stored.push(...(await this.scripts.call((client) => client.hmget(this.keys.key(shard, 'deadData'), ...slice))));
    }
    return stored.map((record, i) => (record === null ? null : parseDeadRecord(ids[i], record)));
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
      dead: 0,
      redelivered: 0,
      requeued: 0,
      active: 0,
      nextDueAt: null,
      lagMs: 0,
    };
    const shards = await Promise.all(
      Array.from({ length: this.options.shards }, (_, shard) =>
        this.scripts.run<number[]>('fixed-stats', this.k(shard, 'ready', 'stats', 'leases'), []),
      ),
    );
    for (const reply of shards) {
      const [groups, pending, pushed, dropped, expired, delivered, dead, redelivered, requeued, active] = reply;
      const [nextDue, now] = reply.slice(10);
      total.groups += groups + active;
      total.dead += dead;
      total.redelivered += redelivered;
      total.requeued += requeued;
      total.active += active;
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

function parseDeadRecord(id: string, stored: string): DeadRecord {
  // A JSON header, then the entries as stored, one a line.
  const [header, ...entries] = stored.split('\n');
  const { group, attempts, error, diedAt } = JSON.parse(header) as DeadHeader;
  return { id, group, attempts, lastError: error, diedAt, entries };
}

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
      batches.push({ group, expired: reply[at + 1] as number, messages: [], attempt: 0 });
    for (let from = offset; from < end; from += batchSize) {
      batches.push({
        group,
        expired: from === offset ? (reply[at + 1] as number) : 0,
        messages: decodeEntries(entries, from, Math.min(end, from + batchSize), raw),
        attempt: 1,
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

/** @internal Per candidate the claim says: offset, expired, claimed, attempt, token (one batch at most). */
export function decodeClaim(reply: TakeReply, read: { group: string; entries: string[] }[], raw: boolean): TakeOutcome {
  const listedEnd = 3 + (reply[2] as number);
  const batches: ClaimedBatch[] = [];
  for (let i = 0; i < read.length; i++) {
    const at = listedEnd + 5 * i;
    const offset = reply[at] as number;
    const expired = reply[at + 1] as number;
    const claimed = reply[at + 2] as number;
    const { group, entries } = read[i];
    if (claimed > 0) {
      batches.push({
        group,
        expired,
        messages: decodeEntries(entries, offset, offset + claimed, raw),
        attempt: reply[at + 3] as number,
        token: reply[at + 4] as string,
      });
    } else if (expired > 0) {
      batches.push({ group, expired, messages: [], attempt: 0 });
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
