import type { Scripts } from '../redis/scripts';
import type { CallKey } from '../redis/call-keys';
import { fencingToken } from '../redis/fencing-token';
import type { QueueKeys } from '../redis/keys';
import { type Acked, delayAck, type TaskLease } from './lua/delay-ack';
import { delayAdvance, type DelayAdvanceReply, type DelayAdvanceInput } from './lua/delay-advance';
import { delayCancel } from './lua/delay-cancel';
import { delayClaim, type DelayClaimReply } from './lua/delay-claim';
import { delayDead, type DeadTask } from './lua/delay-dead';
import { delayDeleteDead } from './lua/delay-delete-dead';
import { delayExtend } from './lua/delay-extend';
import { delayFail, type DelayFailReply } from './lua/delay-fail';
import { delayGet, type StoredTask } from './lua/delay-get';
import { delayMove, type Placement } from './lua/delay-move';
import { delayRelease } from './lua/delay-release';
import { delayRequeue } from './lua/delay-requeue';
import { delayRepeat, type DelayRepeatInput, type RepeatDeclared } from './lua/delay-repeat';
import { delayRequeueDead } from './lua/delay-requeue-dead';
import { delaySchedule, type ScheduleItem, type DelayScheduleReply } from './lua/delay-schedule';
import { delayStats } from './lua/delay-stats';
import { delaySweep, type SweepInput, type SweepStep } from './lua/delay-sweep';
import { delaySweepMark, type SweepMarkInput } from './lua/delay-sweep-mark';
import { delayPass, type PassInput } from './lua/delay-pass';
import { delayUnrepeat } from './lua/delay-unrepeat';
import { readNewestFirst } from '../redis/newest-first';
import { shardKeys, type ScriptProtocol } from '../redis/script-protocol';
import { inChunks, ShardStore } from '../redis/shard-store';
import { zscore, type Scored } from '../redis/score-pages';
import type { ResolvedTime } from '../validation/time';
import type { DelayQueueStats, RepeatInfo, ResolvedDelayQueueOptions, UpcomingTask } from '../interfaces';
import { decodeRepeatEntry } from './lua/repeat-entry';
import { RepeatSchedule } from './repeat-schedule';
import { DELAY_QUEUE_SCRIPTS } from './lua/delay-queue.scripts';
import { DELAY_SHARD_KEY_KINDS, type DelayShardKeyKind, type DelayShardKeys } from './delay-queue.keys';

export type { ClaimedTask, DelayClaimReply } from './lua/delay-claim';
export type { StoredTask } from './lua/delay-get';
export type { Placement } from './lua/delay-move';
export type { ScheduleItem, ScheduleItemResult, DelayScheduleReply } from './lua/delay-schedule';

/**
 * Bounds on one script call (Redis runs one script at a time: a long one freezes every client). Before
 * them, `deadLetters(10000)` with 2 KB errors took 311 ms in one script and a claim of 1,000 tasks 7.2 ms;
 * with them, 2.0-5.5 and 1.7-2.5 ms (BENCHMARKS.md, "Earlier runs", longest script per operation).
 */
const DEAD_LETTERS_PER_CALL = 200;
const MAX_CLAIM_PER_CALL = 500;
/** Deliveries acknowledged or extended per script call: about a claim's work each. */
const LEASES_PER_CALL = 250;
/** Dead letters re-queued or deleted per script call (requeueAll, deleteDead). */
export const DEAD_LETTERS_PER_CHUNK = 500;

/** The Redis side of a DelayQueue: key names, script arguments and reply decoding, nothing else. */
export class DelayQueueStore extends ShardStore<DelayShardKeyKind, DelayShardKeys> {
  constructor(
    scripts: Scripts,
    keys: QueueKeys<DelayShardKeyKind>,
    private readonly options: Readonly<ResolvedDelayQueueOptions>,
  ) {
    super(scripts, DELAY_QUEUE_SCRIPTS, keys, options.shards, shardKeys);
  }

  /** A producer's change, sent at once (`Scripts.runNow`); waits for replicas when the queue asks for it. */
  private write<In, Out>(protocol: ScriptProtocol<string, In, Out>, shard: number, input: In): Promise<Out> {
    const { waitForReplicas } = this.options;
    return this.call(protocol, shard, input, waitForReplicas ? { replicas: waitForReplicas } : 'now');
  }

  /** Schedules tasks of one shard in one call, in order; those of a pass of the task source carry its id. */
  schedule(shard: number, tasks: ScheduleItem[], pass?: string): Promise<DelayScheduleReply> {
    return this.write(delaySchedule, shard, { tasks, pass });
  }

  /** Begins, renews or ends a pass of the task source on a shard: false when a renewal found it expired. */
  pass(shard: number, input: PassInput): Promise<boolean> {
    return this.call(delayPass, shard, input, 'now');
  }

  /** Marks a page of the shard's scheduled tasks as candidates of a sweeping pass; ranks read. */
  sweepMark(shard: number, input: SweepMarkInput): Promise<number> {
    return this.call(delaySweepMark, shard, input, 'now');
  }

  /**
   * Marks these tasks as candidates of the pass' sweep (`mark`): tasks whose write gave up, cancelled by
   * the pass unless it lists them. A mark on a task that is not scheduled (running, dead, gone, a
   * repeat's) cancels nothing (delay-sweep).
   */
  async mark(shard: number, ids: string[], mark: string): Promise<void> {
    await this.scripts.call((client) => client.hset(this.keys.key(shard, 'marks'), ...ids.flatMap((id) => [id, mark])));
  }

  /** Unmarks tasks a sweeping pass listed: they are not swept. */
  async unmark(shard: number, ids: string[]): Promise<void> {
    await this.scripts.call((client) => client.hdel(this.keys.key(shard, 'marks'), ...ids));
  }

  /** Cancels a page of the tasks a sweeping pass marked and did not list. */
  sweep(shard: number, input: SweepInput): Promise<SweepStep> {
    return this.write(delaySweep, shard, input);
  }

  move(
    shard: number,
    id: string,
    mode: 'at' | 'in' | 'by',
    ms: number,
    carrier?: string,
    call?: CallKey,
  ): Promise<Placement | 'active' | 'dead' | 'missing'> {
    return this.write(delayMove, shard, { id, mode, ms, carrier, call });
  }

  cancel(shard: number, id: string, call?: CallKey): Promise<boolean> {
    return this.write(delayCancel, shard, { id, call });
  }

  /** Declares a repeat and places its pending occurrence. */
  repeat(shard: number, input: DelayRepeatInput): Promise<RepeatDeclared> {
    return this.write(delayRepeat, shard, input);
  }

  /** Ends an occurrence of a repeat and places the next. */
  advance(shard: number, input: DelayAdvanceInput): Promise<DelayAdvanceReply> {
    return this.call(delayAdvance, shard, input);
  }

  unrepeat(shard: number, id: string): Promise<boolean> {
    return this.write(delayUnrepeat, shard, id);
  }

  /** One HSCAN step over a shard's repeats: the next cursor ('0': done) and some of them. */
  async scanRepeats(shard: number, cursor: string, count: number): Promise<{ cursor: string; repeats: RepeatInfo[] }> {
    const [next, flat] = await this.scripts.call((client) =>
      client.hscan(this.keys.key(shard, 'repeats'), cursor, 'COUNT', count),
    );
    const repeats: RepeatInfo[] = [];
    for (let i = 0; i < flat.length; i += 2) repeats.push(toRepeatInfo(flat[i], flat[i + 1]));
    return { cursor: next, repeats };
  }

  /**
   * Runs a script of a feature built on the queue on a shard's keys: a `@Recurring` declaration, which
   * keeps the shard's `declarations` hash and places its occurrence (recurring-declare.lua).
   */
  declare<In, Out>(protocol: ScriptProtocol<string, In, Out>, shard: number, input: In): Promise<Out> {
    return this.call(protocol, shard, input);
  }

  /** The shard's `declarations` hash, as stored (recurring-declare.lua writes it). */
  declarations(shard: number): Promise<Record<string, string>> {
    return this.scripts.call((client) => client.hgetall(this.keys.key(shard, 'declarations')));
  }

  /** Deletes one field of the shard's `declarations` hash (a process withdrawing its declaration). */
  async withdrawDeclaration(shard: number, field: string): Promise<void> {
    await this.scripts.call((client) => client.hdel(this.keys.key(shard, 'declarations'), field));
  }

  /** The repeat `id`, or null. */
  async repeatInfo(shard: number, id: string): Promise<RepeatInfo | null> {
    const stored = await this.scripts.call((client) => client.hget(this.keys.key(shard, 'repeats'), id));
    return stored === null ? null : toRepeatInfo(id, stored);
  }

  get(shard: number, id: string): Promise<StoredTask | null> {
    return this.call(delayGet, shard, id);
  }

  claim(shard: number, limit: number): Promise<DelayClaimReply> {
    const { leaseMs, maxAttempts, deadLetter } = this.options;
    const input = {
      limit: Math.min(limit, MAX_CLAIM_PER_CALL),
      leaseMs,
      maxAttempts,
      deadCapacity: deadLetter.capacity,
      token: fencingToken(),
    };
    // Sent at once, in a socket write of its own (`Scripts.runNow`): acknowledgements gain nothing so.
    return this.call(delayClaim, shard, input, 'now');
  }

  /** Acknowledges deliveries of one shard: whether each completed its task, and any successor it made due. */
  ack(shard: number, leases: TaskLease[]): Promise<Acked[]> {
    return inChunks(leases, LEASES_PER_CALL, (chunk) => this.call(delayAck, shard, chunk));
  }

  fail(shard: number, id: string, token: string, retryDelayMs: number, error: string): Promise<DelayFailReply> {
    const { maxAttempts, deadLetter } = this.options;
    return this.call(delayFail, shard, {
      lease: { id, token },
      maxAttempts,
      retryDelayMs,
      deadCapacity: deadLetter.capacity,
      error,
    });
  }

  /** Extends the leases of running deliveries of one shard; true for each still held. */
  extend(shard: number, leases: TaskLease[]): Promise<boolean[]> {
    const { leaseMs } = this.options;
    return inChunks(leases, LEASES_PER_CALL, (chunk) => this.call(delayExtend, shard, { leaseMs, leases: chunk }));
  }

  /**
   * Shutdown: a running delivery is due again at once, counted as an attempt only when `counted` (its
   * handler ran past handlerTimeoutMs; `error` is then recorded as its last).
   */
  release(shard: number, id: string, token: string, counted = false, error = ''): Promise<boolean> {
    return this.call(delayRelease, shard, { id, token, counted, error, maxAttempts: this.options.maxAttempts });
  }

  requeue(shard: number, id: string, time: ResolvedTime): Promise<Placement | null> {
    return this.write(delayRequeue, shard, { id, time });
  }

  /** The `limit` most recent dead letters of a shard, newest first, read a page per script call. */
  dead(shard: number, limit: number): Promise<DeadTask[]> {
    return readNewestFirst(limit, DEAD_LETTERS_PER_CALL, (count, latest, listedAtLatest) =>
      this.call(delayDead, shard, { count, latest, listedAtLatest }),
    );
  }

  /**
   * Up to `count` ids of a shard's due, active or dead set with their scores, from `score` on (down
   * from it when descending), past the first `skip` with exactly that score. An admin read: O(log N + count).
   */
  async range(
    shard: number,
    kind: 'due' | 'active' | 'dead',
    descending: boolean,
    score: number,
    skip: number,
    count: number,
  ): Promise<Scored[]> {
    const args = [this.keys.key(shard, kind), zscore(score), descending ? '-inf' : '+inf', 'BYSCORE'];
    if (descending) args.push('REV');
    args.push('LIMIT', String(skip), String(count), 'WITHSCORES');
    const reply = (await this.scripts.call((client) => client.call('zrange', args))) as string[];
    const entries: Scored[] = [];
    for (let i = 0; i < reply.length; i += 2) entries.push({ shard, member: reply[i], score: Number(reply[i + 1]) });
    return entries;
  }

  /** Payload, latest run ('<attempts>:<token>:<runAt>') and last error of some tasks of a shard; null payload: gone. */
  async details(shard: number, ids: string[]) {
    const [jsons, runs, errors] = await Promise.all(
      (['data', 'runs', 'errors'] as const).map((kind) =>
        this.scripts.call((client) => client.hmget(this.keys.key(shard, kind), ...ids)),
      ),
    );
    return ids.map((id, i) => ({ id, json: jsons[i], run: runs[i], lastError: errors[i] }));
  }

  /** Re-queues one chunk of a shard's dead letters, due now: how many, and Redis' time. */
  requeueDeadChunk(shard: number): Promise<{ requeued: number; serverNow: number }> {
    return this.write(delayRequeueDead, shard, DEAD_LETTERS_PER_CHUNK);
  }

  /** Deletes one chunk of a shard's dead letters that died at least `ageMs` ago: how many. */
  deleteDeadChunk(shard: number, ageMs: number): Promise<number> {
    return this.write(delayDeleteDead, shard, { most: DEAD_LETTERS_PER_CHUNK, ageMs });
  }

  /**
   * Deletes every key of a shard: one command (its keys share a slot). UNLINK frees large values (a
   * million tasks' payloads) in a background thread, so it does not block Redis for long.
   */
  async obliterate(shard: number): Promise<void> {
    const keys = DELAY_SHARD_KEY_KINDS.map((kind) => this.keys.key(shard, kind));
    await this.scripts.call((client) => client.unlink(...keys));
  }

  /** The first `perShard` tasks of each shard's due index, with their times. */
  async dueHeads(perShard: number): Promise<UpcomingTask[]> {
    const shards = await Promise.all(
      Array.from({ length: this.options.shards }, (_, shard) =>
        this.scripts.call((client) => client.zrange(this.keys.key(shard, 'due'), 0, perShard - 1, 'WITHSCORES')),
      ),
    );
    const tasks: UpcomingTask[] = [];
    for (const heads of shards)
      for (let i = 0; i < heads.length; i += 2) tasks.push({ id: heads[i], runAt: Number(heads[i + 1]) });
    return tasks;
  }

  async stats(): Promise<DelayQueueStats> {
    const total: DelayQueueStats = {
      scheduled: 0,
      active: 0,
      dead: 0,
      nextDueAt: null,
      scheduledTotal: 0,
      fired: 0,
      completed: 0,
      retried: 0,
      deadTotal: 0,
      givenBack: 0,
      due: 0,
      lagMs: 0,
    };
    const shards = await Promise.all(
      Array.from({ length: this.options.shards }, (_, shard) => this.call(delayStats, shard, undefined)),
    );
    for (const shard of shards) {
      total.scheduled += shard.scheduled;
      total.active += shard.active;
      total.dead += shard.dead;
      const { nextDue, serverNow } = shard;
      if (nextDue >= 0 && (total.nextDueAt === null || nextDue < total.nextDueAt)) total.nextDueAt = nextDue;
      total.scheduledTotal += shard.scheduledTotal;
      total.fired += shard.fired;
      total.completed += shard.completed;
      total.retried += shard.retried;
      total.deadTotal += shard.deadTotal;
      total.givenBack += shard.givenBack;
      total.due += shard.due;
      // From when the earliest task was due: one back after a lost lease counts from its own time.
      if (nextDue >= 0) total.lagMs = Math.max(total.lagMs, serverNow - shard.headDueAt);
    }
    return total;
  }
}

function toRepeatInfo(id: string, stored: string): RepeatInfo {
  const { occurrence, lastRunAt, lastOutcome, lastSuccessAt, schedule } = decodeRepeatEntry(stored);
  const { cron, tz, everyMs, missed, startAt, endAt } = RepeatSchedule.parse(schedule);
  return {
    id,
    ...(cron !== undefined && { cron }),
    ...(tz !== undefined && { tz }),
    ...(everyMs !== undefined && { everyMs }),
    missed,
    ...(startAt !== undefined && { startAt }),
    ...(endAt !== undefined && { endAt }),
    nextRunAt: occurrence,
    ...(lastRunAt !== undefined && { lastRunAt }),
    ...(lastOutcome !== undefined && { lastOutcome }),
    ...(lastSuccessAt !== undefined && { lastSuccessAt }),
  };
}
