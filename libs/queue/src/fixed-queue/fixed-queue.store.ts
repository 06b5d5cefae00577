import { fencingToken } from '../redis/fencing-token';
import type { QueueKeys } from '../redis/keys';
import { fixedAck, type Acknowledged, type AckReply, type GroupLease } from './lua/fixed-ack';
import type { ClaimRead, ClaimReply } from './lua/claim-reply';
import { fixedClaimOrdered } from './lua/fixed-claim-ordered';
import { fixedClaimUnordered, type FixedClaimUnorderedInput } from './lua/fixed-claim-unordered';
import { fixedClear } from './lua/fixed-clear';
import { fixedDead, type DeadRecord } from './lua/fixed-dead';
import { fixedDeadHeader } from './lua/fixed-dead-header';
import { fixedExpire } from './lua/fixed-expire';
import { fixedExtend } from './lua/fixed-extend';
import { fixedFail, type FailReply } from './lua/fixed-fail';
import { fixedIdle, type IdleGroups } from './lua/fixed-idle';
import { fixedObliterate } from './lua/fixed-obliterate';
import { fixedPauseGroup } from './lua/fixed-pause-group';
import { fixedPush, type GroupPush, type PushReply } from './lua/fixed-push';
import { fixedRelease, type GivenBackLease } from './lua/fixed-release';
import { fixedRequeue } from './lua/fixed-requeue';
import { fixedResumeGroup, type GroupResumed } from './lua/fixed-resume-group';
import { fixedStats } from './lua/fixed-stats';
import { fixedUpgrade } from './lua/fixed-upgrade';
import { readNewestFirst } from '../redis/newest-first';
import { DEAD_BATCHES_PER_CALL } from './fixed-queue.listings';
import { BYTES_PER_POLL, ENTRIES_PER_POLL, GROUPS_PER_POLL, PollBudget, type PollPlan } from './poll-budget';
import { inChunks, ShardStore } from '../redis/shard-store';
import type { Scripts } from '../redis/scripts';
import type { FixedQueueStats, ResolvedFixedQueueOptions } from '../interfaces';
import { FIXED_QUEUE_SCRIPTS } from './lua/fixed-queue.scripts';
import { fixedShardKeys, type FixedShardKeyKind, type FixedShardKeys } from './fixed-queue.keys';

export { messageCount, type GroupPush, type PushReply } from './lua/fixed-push';
export type { ClaimedBatch, ClaimReply } from './lua/claim-reply';
export type { Acknowledged, AckReply, GroupLease } from './lua/fixed-ack';
export type { FailReply } from './lua/fixed-fail';
export type { DeadRecord } from './lua/fixed-dead';

/**
 * Bounds on one call of `obliterate`: groups whose lists it deletes, and the entries they may hold
 * (lists are freed in Redis' own thread unless large, so their size counts too), so that one call
 * holds Redis for a few ms at most (BENCHMARKS.md, "Figures behind the code": obliterate).
 */
const OBLITERATE_GROUPS_PER_CALL = 500;
const OBLITERATE_ENTRIES_PER_CALL = 50_000;

/** Leases extended or given back per script call: a few lookups each, for up to `concurrency` deliveries. */
const LEASES_PER_CALL = 500;

/** What both claim scripts take: all an unordered claim needs, to which an ordered one adds its own. */
type ClaimInput = FixedClaimUnorderedInput;

/** What `push` and the claim scripts call the ordered modes (ARGV). */
const MODES = { unordered: '0', atMostOnce: '1', atLeastOnce: '2' } as const;

/** The Redis side of a FixedQueue: key names, script arguments and reply decoding, nothing else. */
export class FixedQueueStore extends ShardStore<FixedShardKeyKind, FixedShardKeys> {
  /** What `push` and the claim scripts call the queue's mode. */
  private readonly mode: string;
  private readonly budget: PollBudget;

  constructor(
    scripts: Scripts,
    keys: QueueKeys<FixedShardKeyKind>,
    private readonly options: Readonly<ResolvedFixedQueueOptions>,
  ) {
    super(scripts, FIXED_QUEUE_SCRIPTS, keys, options.shards, fixedShardKeys);
    if (!options.ordered) this.mode = MODES.unordered;
    else this.mode = options.delivery === 'at-least-once' ? MODES.atLeastOnce : MODES.atMostOnce;
    this.budget = new PollBudget(options.batchSize);
  }

  get ordered(): boolean {
    return this.mode !== MODES.unordered;
  }

  /** onExhausted 'pause-group': a batch out of attempts pauses its group instead of dying. */
  private get pausesExhausted(): boolean {
    return this.options.onExhausted === 'pause-group';
  }

  groupKey(shard: number, group: string): string {
    return this.keys.member(shard, 'g', group);
  }

  /** `carrier`: a traced call's trace context, for the messages that carry none of their own. */
  async push(shard: number, groups: GroupPush[], carrier = ''): Promise<PushReply> {
    const { capacity, batchSize, maxWaitMs, waitForReplicas } = this.options;
    const input = { capacity, batchSize, maxWaitMs, mode: this.mode, carrier, groups };
    return this.call(fixedPush, shard, input, waitForReplicas ? { replicas: waitForReplicas } : 'now');
  }

  /**
   * Claims up to `limit` batches from `candidates` (groups an earlier call listed as due; re-checked
   * here), and lists the groups due now as the candidates of the next call: one round trip per poll.
   * One call handles a bounded share of that (`PollBudget`); the shard then stays due (`nextDueAt` is
   * `serverNow`), so a caller with more room polls again at once.
   */
  async take(shard: number, limit: number, listed: string[], raw = false, traced = false): Promise<ClaimReply> {
    // Entry sizes are unknown until read: rather than read a batch of them blind (megabytes, if they
    // are large), the first poll with candidates reads one entry first.
    if (!this.budget.learned && listed.length > 0) this.budget.observe([await this.head(shard, listed[0], 1)]);
    const plan = this.budget.plan(limit);
    // Never more than the plan's batches are claimed: reading more heads would be work for nothing.
    const candidates = listed.length > plan.batches ? listed.slice(0, plan.batches) : listed;
    const input = this.claimInput(plan, candidates, raw, traced);
    const { reply, lists } = this.ordered
      ? await this.claimOrdered(shard, input)
      : await this.claimUnordered(shard, input, plan);
    this.budget.observe(lists);
    return reply;
  }

  /** `take` for unordered queues: a group may give several batches at once. */
  private claimUnordered(shard: number, input: ClaimInput, plan: PollPlan): Promise<ClaimRead> {
    // With fewer candidates than room, each may give several batches (one under groupRateLimit).
    if (!this.options.groupRateLimit)
      input.read *= Math.max(1, Math.floor(plan.batches / Math.max(1, input.candidates.length)));
    return this.call(fixedClaimUnordered, shard, input);
  }

  /**
   * `take` for ordered queues: one batch per group at most, the group held by a token until `ack`
   * (or `fail`/`release`, or its lease running out).
   */
  private claimOrdered(shard: number, input: ClaimInput): Promise<ClaimRead> {
    const { leaseMs, maxAttempts, deadLetter } = this.options;
    // Added to the input rather than spread with it into a new literal: V8 (Node 20) adds each property
    // after a spread on a slow path, about 2 µs apiece, which made this the costliest line of a claim.
    return this.call(
      fixedClaimOrdered,
      shard,
      Object.assign(input, {
        mode: this.mode,
        leaseMs,
        maxAttempts,
        deadCapacity: deadLetter.capacity,
        pauseExhausted: this.pausesExhausted,
        // The shard leads so that a dead batch's id (its last delivery's token) says where to find it.
        tokenBase: `${shard}.${fencingToken()}`,
      }),
    );
  }

  /** What both claim scripts take: the group's batch rules, the poll's share, and how to read entries. */
  private claimInput(plan: PollPlan, candidates: string[], raw: boolean, traced: boolean): ClaimInput {
    const { batchSize, maxAgeMs, maxWaitMs, groupRateLimit } = this.options;
    const limit = plan.batches;
    return {
      batchSize,
      maxAgeMs: maxAgeMs ?? 0,
      maxWaitMs,
      limit,
      groupRateLimit,
      candidates,
      read: plan.perBatch,
      raw,
      traced,
    };
  }

  /**
   * Finishes deliveries of an ordered queue; a stale one (its token lost the group) changes nothing.
   * Each call leaves in a socket write of its own rather than with the tick's other commands: the
   * shards' acknowledgements of one tick then reach Redis one after the other, and the first replies
   * come back (their slots run their next batches) while Redis still works on the rest, where one
   * write made this process and Redis take turns (BENCHMARKS.md, "Figures behind the code": acknowledgements).
   */
  async ack(shard: number, deliveries: Acknowledged[], raw = false, traced = false): Promise<AckReply> {
    const { batchSize, maxWaitMs, maxAgeMs, leaseMs, groupRateLimit } = this.options;
    const replies = await inChunks(deliveries, this.acksPerCall(), async (chunk) => [
      await this.call(
        fixedAck,
        shard,
        {
          batchSize,
          maxWaitMs,
          maxAgeMs: maxAgeMs ?? 0,
          mode: this.mode,
          leaseMs,
          tokenBase: `${shard}.${fencingToken()}`,
          maxEntries: ENTRIES_PER_POLL,
          maxBytes: BYTES_PER_POLL,
          groupRateLimit,
          raw,
          traced,
          deliveries: chunk,
        },
        'now',
      ),
    ]);
    if (replies.length === 1) return replies[0];
    const all: AckReply = { serverNow: 0, wakeAt: -1, dueAt: [], next: [], expired: [] };
    for (const { serverNow, wakeAt, dueAt, next, expired } of replies) {
      all.serverNow = Math.max(all.serverNow, serverNow);
      if (wakeAt >= 0 && (all.wakeAt < 0 || wakeAt < all.wakeAt)) all.wakeAt = wakeAt;
      all.dueAt.push(...dueAt);
      all.next.push(...next);
      all.expired.push(...expired);
    }
    return all;
  }

  /**
   * Deliveries one acknowledgement call finishes: at-least-once, each trims the entries it owns (a
   * batch at most), so their number is bounded like a poll's reads.
   */
  private acksPerCall(): number {
    if (this.mode !== MODES.atLeastOnce) return GROUPS_PER_POLL;
    return Math.max(1, Math.min(GROUPS_PER_POLL, Math.floor(ENTRIES_PER_POLL / this.options.batchSize)));
  }

  /**
   * At-least-once: a failed delivery is retried after `delayMs`, or dead-lettered (or its group paused)
   * after its last attempt; the first `handled` of its `size` messages are acknowledged first.
   */
  fail(
    shard: number,
    lease: GroupLease,
    delayMs: number,
    error: string,
    { handled, size }: { handled: number; size: number } = { handled: 0, size: 0 },
  ): Promise<FailReply> {
    const { batchSize, maxWaitMs, maxAttempts, deadLetter } = this.options;
    return this.call(fixedFail, shard, {
      batchSize,
      maxWaitMs,
      lease,
      retryDelayMs: delayMs,
      maxAttempts,
      deadCapacity: deadLetter.capacity,
      error,
      pauseExhausted: this.pausesExhausted,
      handled,
      size,
    });
  }

  /**
   * At-least-once, at shutdown: unfinished deliveries are due again at once, counted as attempts only
   * where their handlers ran past handlerTimeoutMs (`error` is then recorded as their last).
   */
  release(shard: number, leases: GivenBackLease[], error = ''): Promise<boolean[]> {
    return inChunks(leases, LEASES_PER_CALL, (chunk) => this.call(fixedRelease, shard, { error, leases: chunk }));
  }

  /** Heartbeat: extends the leases of running deliveries; false where the lease was lost. */
  extend(shard: number, leases: GroupLease[]): Promise<boolean[]> {
    const { leaseMs } = this.options;
    return inChunks(leases, LEASES_PER_CALL, (chunk) => this.call(fixedExtend, shard, { leaseMs, leases: chunk }));
  }

  /** The newest `limit` dead batches of a shard, a page of at most DEAD_BATCHES_PER_CALL per script call. */
  dead(shard: number, limit: number): Promise<DeadRecord[]> {
    return readNewestFirst(limit, DEAD_BATCHES_PER_CALL, (count, latest, listedAtLatest) =>
      this.call(fixedDead, shard, { count, latest, listedAtLatest }),
    );
  }

  /** Appends a dead batch's messages to its group again. Null when no such dead batch exists. */
  async requeue(shard: number, id: string): Promise<{ dropped: number; wakeAt: number } | null> {
    // The header first: the group's list must be declared as a key.
    const header = await this.call(fixedDeadHeader, shard, id);
    if (header === null) return null;
    const { capacity, batchSize, maxWaitMs } = this.options;
    return this.call(fixedRequeue, shard, { id, group: header.group, capacity, batchSize, maxWaitMs });
  }

  /** Deletes a group's messages (counted as dropped); returns how many. A delivery of it under way finishes harmlessly. */
  clear(shard: number, group: string): Promise<number> {
    return this.call(fixedClear, shard, group, 'now');
  }

  /** Takes a group out of the ready index until `resumeGroup`; false when it was paused already. */
  pauseGroup(shard: number, group: string): Promise<boolean> {
    return this.call(fixedPauseGroup, shard, group);
  }

  /** Puts a paused group back into the ready index (unless its batch is out): when it is due. */
  resumeGroup(shard: number, group: string): Promise<GroupResumed> {
    const { batchSize, maxWaitMs } = this.options;
    return this.call(fixedResumeGroup, shard, { group, batchSize, maxWaitMs });
  }

  /**
   * Converts a shard written by an earlier version: its lists lose their TTL and join the last-push
   * index, a bounded page of groups per call. A shard with nothing to convert costs one short call.
   */
  async upgrade(shard: number): Promise<void> {
    let page: string[] = [];
    do page = await this.call(fixedUpgrade, shard, { pageSize: OBLITERATE_GROUPS_PER_CALL, page });
    while (page.length > 0);
  }

  /** Deletes every key of a shard, groups' lists included, a bounded page of groups per script call. */
  async obliterate(shard: number): Promise<void> {
    // A list holds `capacity` entries at most.
    const pageSize = Math.max(
      1,
      Math.min(OBLITERATE_GROUPS_PER_CALL, Math.floor(OBLITERATE_ENTRIES_PER_CALL / this.options.capacity)),
    );
    let page: string[] = [];
    const rated = this.options.groupRateLimit !== undefined;
    do page = await this.call(fixedObliterate, shard, { pageSize, page, rated });
    while (page.length > 0);
  }

  /** The first `count` entries of a group's list, oldest first. */
  head(shard: number, group: string, count: number): Promise<string[]> {
    return this.scripts.call((client) => client.lrange(this.groupKey(shard, group), 0, count - 1));
  }

  size(shard: number, group: string): Promise<number> {
    return this.scripts.call((client) => client.llen(this.groupKey(shard, group)));
  }

  /** Up to `count` groups of a shard that nobody may have pushed to for ttlMs: the candidates of `expire`. */
  idleGroups(shard: number, count: number): Promise<IdleGroups> {
    return this.call(fixedIdle, shard, { ttlMs: this.options.ttlMs, count });
  }

  /** Deletes the listed groups whose newest message is older than ttlMs (counted expired): how many each lost. */
  expire(shard: number, groups: string[]): Promise<{ serverNow: number; expired: number[] }> {
    return this.call(fixedExpire, shard, { ttlMs: this.options.ttlMs, groups });
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
      deadTotal: 0,
      redelivered: 0,
      requeued: 0,
      givenBack: 0,
      active: 0,
      pausedGroups: 0,
      nextDueAt: null,
      lagMs: 0,
    };
    const shards = await Promise.all(
      Array.from({ length: this.options.shards }, (_, shard) => this.call(fixedStats, shard, undefined)),
    );
    for (const shard of shards) {
      total.groups += shard.ready + shard.active;
      total.dead += shard.deadNow;
      total.deadTotal += shard.dead;
      total.redelivered += shard.redelivered;
      total.requeued += shard.requeued;
      total.givenBack += shard.givenBack;
      total.active += shard.active;
      total.pausedGroups += shard.pausedGroups;
      total.pending += shard.pending;
      total.pushed += shard.pushed;
      total.dropped += shard.dropped;
      total.expired += shard.expired;
      total.delivered += shard.delivered;
      const { nextDue, serverNow } = shard;
      if (nextDue >= 0 && (total.nextDueAt === null || nextDue < total.nextDueAt)) total.nextDueAt = nextDue;
      if (nextDue >= 0) total.lagMs = Math.max(total.lagMs, serverNow - nextDue);
    }
    return total;
  }
}
