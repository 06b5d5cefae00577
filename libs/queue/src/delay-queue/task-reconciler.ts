import { Logger } from '@nestjs/common';
import { randomUUID } from 'node:crypto';
import type { OnExists, ReconcileCallOptions, ReconcileResult, ReconcileTrigger, SourcedTask } from '../interfaces';
import { iterable, type ReconcilePort, type TaskSourceMethod } from './task-source';
import type { RecordCreated } from '../redis/queue-meta';
import type { HeldWrites } from '../redis/redis-connection';
import { byShard } from '../utils/by-shard';
import { describeError } from '../utils/errors';
import { nameProblem } from '../validation/payload';
import { resolveTime } from '../validation/time';
import type { ScheduleItem } from './delay-queue.store';
import {
  moreRowsRefused,
  noTaskSource,
  passDone,
  passFailed,
  rowRefused,
  secondTaskSource,
} from './task-source.messages';

/**
 * Listed tasks written per script call: delay-schedule does a few O(log N) commands per task, and 100
 * of them take about as long as a claim of 500 tasks (test/faults/slowlog); payloads are bounded by bytes too.
 */
const TASKS_PER_CALL = 100;
const BYTES_PER_CALL = 64 * 1024;
/** Calls under way at once: the source is read while Redis writes, and memory holds at most this many calls' tasks. */
const CALLS_IN_FLIGHT = 16;
/** Scheduled tasks marked, and marks read, per sweeping script call (a few commands each). */
const MARKS_PER_CALL = 100;
/** Refused rows logged one by one per pass; the rest are counted in one line. */
const REFUSALS_LOGGED = 20;
/**
 * How long a pass' record of the writes made since it began outlives its last renewal (a third of it):
 * what a pass whose process died leaves in Redis is gone by then.
 */
const PASS_LEASE_MS = 30_000;
/**
 * The lease on an owed pass (one process across all runs it), renewed every third of it: a pass whose
 * process died is taken over this long after its last renewal, by the next look of a process with a source.
 */
const OWED_LEASE_MS = 10_000;
/** How often a process with a source says so, and looks for a pass owed that pub/sub may have missed. */
const HEARTBEAT_MS = 3000;
/** How long a process with a source counts as live after saying so. */
const SOURCE_ALIVE_MS = 10_000;
/** Pause between tries to record a pass owed by a write that gave up, while Redis does not answer. */
const OWE_RETRY_MS = 1000;
/**
 * Ids of writes that gave up kept here until Redis has them: past them a write that gave up is
 * compensated as a missing task only (Redis keeps at most 1 MiB of them too, queue-pass.lua).
 */
const MAX_GIVEN_UP_IDS = 10_000;

interface Counts {
  listed: number;
  restored: number;
  kept: number;
  invalid: number;
}

/**
 * Runs a DelayQueue's task source (its `@TaskSource` method): lists the tasks the application's records
 * say should exist and writes each with `onExists` ('keep' by default: a task Redis holds, in any state,
 * is left alone), many per script call per shard, streaming, so memory holds a few calls' worth of
 * tasks whatever the source's size. A sweeping pass also cancels the scheduled tasks it did not list,
 * through marks kept in Redis beside the tasks (delay-sweep-mark, delay-sweep), never a list of ids here.
 * A task written by anyone after the pass began is neither written nor swept by it (delay-pass): the
 * source may have been read before that write. Passes of one process run one after the other.
 */
export class TaskReconciler implements HeldWrites, RecordCreated {
  private source?: TaskSourceMethod;
  private queueTail: Promise<unknown> = Promise.resolve();
  private readonly logger: Logger;
  /** Looking for an owed pass (and running it) now; `again`: news of one came meanwhile. */
  private owedRunning = false;
  private again = false;
  /** A pass owed by a write that gave up, not recorded yet (Redis away): retried until it is. */
  private oweTimer?: NodeJS.Timeout;
  /** The ids of the writes that gave up since the last pass owed was recorded. */
  private readonly givenUp = new Set<string>();
  private heartbeats?: NodeJS.Timeout;
  private beating = false;
  private closed = false;

  constructor(private readonly port: ReconcilePort) {
    this.logger = new Logger(`DelayQueue ${port.queue}`);
  }

  /** Its queue's record was created by this process (a first start, or a loss): the pass it owes is announced and run. */
  recordCreated(): void {
    this.port.announce();
    void this.runOwed();
  }

  /** The `Class.method` of its source, if it has one. */
  get sourceLabel(): string | undefined {
    return this.source?.label;
  }

  /**
   * Gives the queue its source (QueueOrchestrator, at bootstrap): from then on this process says in
   * Redis that it has one, listens for passes owed, and runs one owed already (a first deployment whose
   * producers started first).
   */
  attach(source: TaskSourceMethod): void {
    if (this.source) throw secondTaskSource(this.port.queue, this.source.label, source.label);
    this.source = source;
    this.port.listen(() => void this.runOwed());
    void this.heartbeat();
    this.heartbeats = setInterval(() => void this.heartbeat(), HEARTBEAT_MS).unref();
  }

  /** Says in Redis that a live process has a source, and runs a pass owed (one look at a time). */
  private async heartbeat(): Promise<void> {
    if (this.closed || this.beating) return;
    this.beating = true;
    try {
      if ((await this.port.record.alive(SOURCE_ALIVE_MS)) !== undefined) void this.runOwed();
    } catch {
      // Redis away: the next heartbeat says it again (RedisConnection logs the outage).
    } finally {
      this.beating = false;
    }
  }

  /**
   * A schedule, reschedule or cancel of task `id` gave up: the queue owes a pass of its task source,
   * recorded once Redis answers again (and announced), so that a process with the source writes what
   * was missed. That pass writes the task as the source lists it whatever Redis holds, and cancels it
   * when the source does not list it: the write that gave up was the application's, after its commit.
   */
  oweAfterGiveUp(id: string): void {
    if (this.closed) return;
    if (this.givenUp.size < MAX_GIVEN_UP_IDS) this.givenUp.add(id);
    if (this.oweTimer !== undefined) return;
    const attempt = () => {
      const ids = [...this.givenUp];
      this.port.record.owe('write-failed', ids).then(
        () => {
          this.oweTimer = undefined;
          for (const sent of ids) this.givenUp.delete(sent);
          this.port.announce();
          void this.runOwed();
        },
        () => {
          if (!this.closed) this.oweTimer = setTimeout(attempt, OWE_RETRY_MS).unref();
        },
      );
    };
    this.oweTimer = setTimeout(attempt, 0).unref();
  }

  /** Nothing to send: a pass owed and not recorded by shutdown is lost with the process, as its write was. */
  drain(): Promise<void> {
    return Promise.resolve();
  }

  close(): void {
    this.closed = true;
    clearTimeout(this.oweTimer);
    clearInterval(this.heartbeats);
  }

  /** A pass, after any of this process still running. Rejects with QueueConfigError when there is no source. */
  run(options: ReconcileCallOptions, trigger: ReconcileTrigger, lease = ''): Promise<ReconcileResult> {
    const source = this.source;
    if (source === undefined) return Promise.reject(noTaskSource(this.port.queue));
    const pass = this.queueTail.then(() => this.pass(source, options, trigger, lease));
    this.queueTail = pass.catch(() => undefined);
    return pass;
  }

  /**
   * Runs the pass owed, if one is and no live process holds its lease: once across processes. News that
   * comes while this runs makes it look again after.
   */
  private async runOwed(): Promise<void> {
    if (this.source === undefined || this.closed) return;
    if (this.owedRunning) {
      this.again = true;
      return;
    }
    this.owedRunning = true;
    try {
      do {
        this.again = false;
        await this.takeOwed();
      } while (this.again && !this.closed);
    } finally {
      this.owedRunning = false;
    }
  }

  private async takeOwed(): Promise<void> {
    const token = randomUUID();
    let renewal: NodeJS.Timeout | undefined;
    try {
      const owed = await this.port.record.take(token, OWED_LEASE_MS);
      if (owed === undefined) return;
      renewal = setInterval(
        () => void this.port.record.renew(token, OWED_LEASE_MS).catch(() => undefined),
        OWED_LEASE_MS / 3,
      ).unref();
      await this.run({}, owed.why, token);
    } catch {
      // Redis away, or the pass failed (it logged why): still owed, taken again once its lease runs out.
    } finally {
      clearInterval(renewal);
    }
  }

  private async pass(
    source: TaskSourceMethod,
    options: ReconcileCallOptions,
    trigger: ReconcileTrigger,
    lease: string,
  ): Promise<ReconcileResult> {
    const { defaults } = this.port;
    const onExists = options.onExists ?? defaults?.onExists ?? 'keep';
    const sweep = options.sweep ?? defaults?.sweep ?? false;
    const began = Date.now();
    const pass = randomUUID();
    try {
      const start = await this.port.record.state();
      // Writes that gave up, read with what is owed: written as listed whatever Redis holds, cancelled
      // (when scheduled) if not listed, as the application's calls after its commit would have.
      const givenUp = new Set(start.owed?.ids);
      const { counts, swept } = await this.tracked(pass, async () => {
        if (sweep) await this.forEachShard((shard) => this.markScheduled(shard, pass));
        else if (givenUp.size > 0) await this.markGivenUp(givenUp, pass);
        const sweeps = sweep || givenUp.size > 0;
        const listed = await this.list(source, onExists, pass, sweeps, givenUp);
        return { counts: listed, swept: sweeps ? await this.sweep(pass) : 0 };
      });
      const result: ReconcileResult = { ...counts, swept, durationMs: Date.now() - began };
      await this.port.record.passed({ ...result, trigger, at: Date.now() }, start, lease);
      this.logger.log(passDone(source.label, trigger, result));
      if (this.port.events.has('queue.reconciled'))
        this.port.events.emit('queue.reconciled', { queue: this.port.queue, trigger, ...result });
      return result;
    } catch (error) {
      this.logger.error(passFailed(source.label, trigger, describeError(error)));
      throw error;
    }
  }

  /**
   * Runs `work` as the pass `pass` in Redis (delay-pass): begun on every shard before it, renewed while
   * it runs, ended after it, so that every write made meanwhile is known to it.
   */
  private async tracked<R>(pass: string, work: () => Promise<R>): Promise<R> {
    const each = (op: 'begin' | 'renew' | 'end') =>
      this.forEachShard(
        async (shard) => void (await this.port.store.pass(shard, { op, pass, leaseMs: PASS_LEASE_MS })),
      );
    await each('begin');
    // A renewal that fails is retried by the next; one that finds the pass expired makes its next write fail.
    const renewal = setInterval(() => void each('renew').catch(() => undefined), PASS_LEASE_MS / 3);
    renewal.unref();
    try {
      return await work();
    } finally {
      clearInterval(renewal);
      // Left behind when Redis is away: it expires with its lease.
      await each('end').catch(() => undefined);
    }
  }

  /** Streams the source into coalesced writes per shard, a bounded number under way at once. */
  private async list(
    source: TaskSourceMethod,
    onExists: OnExists,
    pass: string,
    sweep: boolean,
    givenUp: Set<string>,
  ): Promise<Counts> {
    const counts: Counts = { listed: 0, restored: 0, kept: 0, invalid: 0 };
    const rows = iterable(source);
    const pending = Array.from({ length: this.port.shards }, () => ({
      items: [] as ScheduleItem[],
      unlisted: [] as string[],
      bytes: 0,
    }));
    const inFlight = new Set<Promise<void>>();
    let failure: { error: unknown } | undefined;
    const send = async (shard: number) => {
      const { items, unlisted } = pending[shard];
      pending[shard] = { items: [], unlisted: [], bytes: 0 };
      const call = this.write(shard, items, unlisted, pass, sweep, counts).catch((error: unknown) => {
        failure ??= { error };
      });
      inFlight.add(call);
      void call.finally(() => inFlight.delete(call));
      if (inFlight.size >= CALLS_IN_FLIGHT) await Promise.race(inFlight);
      if (failure) throw failure.error;
    };
    /** Takes a row; a promise when it filled its shard's call, which is sent (and waited for when too many are under way). */
    const take = (row: unknown): Promise<void> | undefined => {
      counts.listed += 1;
      const task = this.item(source.label, row as SourcedTask, onExists, counts, givenUp);
      if (task === undefined) return undefined;
      const shard = this.port.shardOf(task.id);
      const at = pending[shard];
      if ('json' in task) {
        at.items.push(task);
        at.bytes += task.json.length;
      } else at.unlisted.push(task.id);
      if (at.items.length >= TASKS_PER_CALL || at.bytes >= BYTES_PER_CALL || at.unlisted.length >= TASKS_PER_CALL)
        return send(shard);
      return undefined;
    };
    // A synchronous source is read without a turn of the event loop per row (`for await` takes one).
    if (Symbol.asyncIterator in rows) {
      for await (const row of rows) await take(row);
    } else {
      for (const row of rows) {
        const sent = take(row);
        if (sent) await sent;
      }
    }
    for (let shard = 0; shard < this.port.shards; shard++)
      if (pending[shard].items.length > 0 || pending[shard].unlisted.length > 0) await send(shard);
    await Promise.all(inFlight);
    if (failure) throw failure.error;
    if (counts.invalid > REFUSALS_LOGGED)
      this.logger.warn(moreRowsRefused(source.label, counts.invalid, REFUSALS_LOGGED));
    return counts;
  }

  /**
   * A row as the task to write, or undefined when it is refused (counted and logged); a refused row whose
   * id is sound still protects its task from the sweep (`{ id }`): the records list it.
   */
  private item(
    label: string,
    row: SourcedTask,
    onExists: OnExists,
    counts: Counts,
    givenUp: Set<string>,
  ): ScheduleItem | { id: string } | undefined {
    const id: unknown = typeof row === 'object' && row !== null ? row.id : undefined;
    const badId = nameProblem(id);
    const refuse = (why: string) => {
      counts.invalid += 1;
      if (counts.invalid <= REFUSALS_LOGGED)
        this.logger.warn(rowRefused(label, badId === undefined ? `"${String(id)}"` : `#${counts.listed}`, why));
    };
    if (typeof row !== 'object' || row === null) {
      refuse(`expected { id, runAt? | delayMs?, payload }, got ${row === null ? 'null' : typeof row}`);
      return undefined;
    }
    if (badId !== undefined) {
      refuse(`id ${badId}`);
      return undefined;
    }
    try {
      const time = resolveTime({ runAt: row.runAt, delayMs: row.delayMs });
      const written = givenUp.has(id as string) ? 'replace' : onExists;
      return { id: id as string, json: this.port.encode(row.payload), time, onExists: written };
    } catch (error) {
      refuse(describeError(error));
      return { id: id as string };
    }
  }

  private async write(
    shard: number,
    items: ScheduleItem[],
    unlisted: string[],
    pass: string,
    sweep: boolean,
    counts: Counts,
  ): Promise<void> {
    if (sweep) {
      const ids = items.map((item) => item.id).concat(unlisted);
      if (ids.length > 0) await this.port.store.unmark(shard, ids);
    }
    if (items.length === 0) return;
    const sentAt = Date.now();
    const reply = await this.port.store.schedule(shard, items, pass);
    this.port.written(shard, reply, sentAt);
    for (const result of reply.results) {
      if (result.changed) counts.restored += 1;
      else counts.kept += 1;
    }
  }

  /** Marks every task scheduled in the shard now as a candidate of the sweep, a page per call. */
  private async markScheduled(shard: number, mark: string): Promise<void> {
    for (let first = 0; ; first += MARKS_PER_CALL) {
      const read = await this.port.store.sweepMark(shard, { mark, first, count: MARKS_PER_CALL });
      if (read < MARKS_PER_CALL) return;
    }
  }

  /** Marks the tasks whose write gave up as candidates of this pass' sweep, in their shards. */
  private async markGivenUp(ids: Set<string>, mark: string): Promise<void> {
    const tasks = byShard([...ids].map((id) => ({ id, shard: this.port.shardOf(id) })));
    await Promise.all(
      [...tasks].map(([shard, marked]) =>
        this.port.store.mark(
          shard,
          marked.map(({ id }) => id),
          mark,
        ),
      ),
    );
  }

  private async sweep(pass: string): Promise<number> {
    let swept = 0;
    await this.forEachShard(async (shard) => {
      let cursor = '0';
      do {
        const step = await this.port.store.sweep(shard, { mark: pass, pass, cursor, count: MARKS_PER_CALL });
        swept += step.swept;
        cursor = step.cursor;
      } while (cursor !== '0');
    });
    return swept;
  }

  private async forEachShard(work: (shard: number) => Promise<void>): Promise<void> {
    await Promise.all(Array.from({ length: this.port.shards }, (_, shard) => work(shard)));
  }
}
