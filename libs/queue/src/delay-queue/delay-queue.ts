import { repeatEnded, repeatClockMoving, taskCancelled } from './delay-queue.messages';
import { Logger, OnModuleInit } from '@nestjs/common';
import { randomUUID } from 'node:crypto';
import type { QueueEvents } from '../events/queue-events';
import { QueueKeys, shardOf } from '../redis/keys';
import { QueueRecord } from '../redis/queue-meta';
import type { ConsumerRegistry } from '../consumer/consumer.registry';
import type { RedisConnection } from '../redis/redis-connection';
import type { QueueSettings } from '../queue.settings';
import { resolveDelayQueueOptions } from '../validation/delay-queue-options';
import { assertLimit, assertName, PayloadCodec } from '../validation/payload';
import { assertCallOptions, CALL_OPTIONS } from '../validation/call-options';
import { resolveDelta, resolveNewTime, resolveTime } from '../validation/time';
import { QueueConnectionError } from '../errors';
import type {
  ListedTask,
  Page,
  PageOptions,
  TaskListState,
  DeadTask,
  DelayQueueOptions,
  DelayQueueStats,
  ObliterateOptions,
  ReconcileCallOptions,
  ReconcileResult,
  RepeatEvery,
  ResolvedDelayQueueOptions,
  RepeatInfo,
  RepeatOptions,
  RescheduleOptions,
  ScheduledRepeat,
  ScheduledTask,
  ScheduleOptions,
  ScheduleResult,
  TaskInfo,
  TaskTime,
  UpcomingTask,
  WriteRetry,
} from '../interfaces';
import { PauseFlag } from '../redis/pause-flag';
import { WakeHints } from '../redis/wake-hints';
import { WriteRetries } from '../redis/write-retry';
import { callKey, idFromKey, LateTry } from '../redis/call-keys';
import { QueueTracer } from '../tracing/queue-tracer';
import { DelayQueueStore, type ScheduleItemResult } from './delay-queue.store';
import { TaskInspection } from './task-inspection';
import { TaskWrites } from './task-writes';
import { RepeatOccurrences } from './repeat-occurrences';
import { TaskReconciler } from './task-reconciler';
import { RepeatSchedule } from './repeat-schedule';
import { queueLogContext } from '../utils/log-line';
import { QueueControls } from '../queue-controls';

/** @internal How a queue the library makes for itself differs from an application's. */
export interface DelayQueueInternals {
  /** Whether the loss of its data is reported (health, event): not for a queue that heals by itself. */
  reportsLoss?: boolean;
}

/**
 * Tasks due at a given time, addressable by id so they can be moved or cancelled in O(log N).
 * Delivery is at-least-once: a claimed task not acknowledged within its lease is delivered again;
 * failures retry with backoff, then go to a dead-letter set.
 */
export class DelayQueue<T = unknown> implements OnModuleInit {
  readonly name: string;
  /** Its options as it runs with them: validated, every default applied. */
  readonly options: Readonly<ResolvedDelayQueueOptions>;
  /** @internal Its keys, scripts and replies: for tests that look underneath. */
  readonly store: DelayQueueStore;
  private readonly codec: PayloadCodec;
  /** @internal Its record in Redis, whose loss says its data was lost. */
  readonly record: QueueRecord;
  /** @internal Wake-up hints of this queue from this process, its consumers' included. */
  readonly hints: WakeHints;
  private readonly writes: TaskWrites;
  private readonly controls: QueueControls;
  private readonly inspection: TaskInspection<T>;
  private readonly occurrences: RepeatOccurrences;
  /** Writes retried within their `retryMs`. */
  private readonly retries = new WriteRetries();
  private readonly commandTimeoutMs: number;
  private readonly logger: Logger;
  /** @internal Runs its `@TaskSource`. */
  readonly reconciler: TaskReconciler;

  /** @internal Made by Nest (QueueModule), not by the application. */
  constructor(
    options: DelayQueueOptions,
    private readonly connection: RedisConnection,
    settings: QueueSettings,
    events: QueueEvents,
    private readonly consumers: ConsumerRegistry,
    internal: DelayQueueInternals = {},
  ) {
    this.logger = new Logger(queueLogContext(options?.name));
    this.options = resolveDelayQueueOptions(options, `delay queue "${options?.name}"`, (warning) =>
      this.logger.warn(warning),
    );
    this.name = this.options.name;
    this.codec = new PayloadCodec(
      this.name,
      this.options.maxPayloadBytes ?? settings.maxPayloadBytes,
      this.options.schema,
    );
    this.store = new DelayQueueStore(
      connection.scripts,
      new QueueKeys(settings.prefix, this.name, this.options.shards),
      this.options,
    );
    this.record = new QueueRecord(
      connection,
      this.store.keys,
      this.name,
      'delay',
      this.options.shards,
      internal.reportsLoss ?? true,
      // The reconciler is made below, before the record's first call.
      { recordCreated: () => this.reconciler.recordCreated() },
    );
    this.hints = WakeHints.of(connection, this.store.keys.wakeChannel, this.options.shards, settings.idlePollMs);
    const pauseFlag = new PauseFlag(connection.scripts, this.store.keys, this.options.shards, this.hints);
    this.occurrences = new RepeatOccurrences(this.store, connection.clock);
    this.writes = new TaskWrites({
      queue: this.name,
      store: this.store,
      hints: this.hints,
      clock: connection.clock,
      events,
      tracer: (this.options.tracing ?? settings.tracing) ? new QueueTracer(this.name, 'delay') : undefined,
    });
    this.inspection = new TaskInspection(this.store, this.options.shards);
    this.controls = new QueueControls('delay', this, pauseFlag, events, consumers, () => this.writes.flush());
    connection.holdsWrites(this.writes.batcher);
    connection.holdsWrites(this.retries);
    this.commandTimeoutMs = settings.commandTimeoutMs;
    this.reconciler = new TaskReconciler({
      queue: this.name,
      shards: this.options.shards,
      store: this.store,
      record: this.record,
      events,
      defaults: this.options.reconcile,
      // A refused SUBSCRIBE (an ACL) leaves the heartbeat's look every few seconds.
      listen: (owed) => void connection.subscribe(this.store.keys.passChannel, owed, owed).catch(() => undefined),
      announce: () => void connection.client.publish(this.store.keys.passChannel, 'owed').catch(() => undefined),
      encode: (payload) => this.codec.encode(payload),
      shardOf: (id) => this.shard(id),
      written: (shard, { serverNow, head, results }, sentAt) => {
        connection.clock.observe(serverNow, sentAt);
        if (results.some((result) => result.changed && result.runAt === head))
          this.writes.hint(shard, { runAt: head, serverNow, isHead: true });
      },
    });
    connection.holdsWrites(this.reconciler);
  }

  async onModuleInit(): Promise<void> {
    await this.record.assert();
  }

  /**
   * Schedules a task at `runAt` or after `delayMs` (Redis time); neither means now. An existing task with
   * the same id is replaced (new payload, new time), or kept, or either by whichever time is earlier or
   * later (`onExists`); `debounce` pushes it back on each schedule, never past `maxWaitMs` after the one
   * that created it. The result says the task's time now, and whether this call changed it. `retryMs`
   * (or the queue's) retries it when Redis did not take it, and an `idempotencyKey` lets the application
   * send it again itself: either way it is applied once (see `WriteRetry`); a relative time counts from
   * the try that Redis took.
   */
  async schedule(payload: T, options: ScheduleOptions = {}): Promise<ScheduleResult> {
    const name = 'schedule(payload, options)';
    assertCallOptions(name, options, CALL_OPTIONS.schedule);
    const retryMs = this.retryMs(options);
    const { idempotencyKey } = options;
    const id = options.id ?? (idempotencyKey === undefined ? randomUUID() : idFromKey(idempotencyKey));
    const time = resolveTime(options);
    const onExists = options.onExists ?? (options.replace === false ? 'keep' : 'replace');
    const json = this.codec.encode(payload);
    const maxWaitMs = options.debounce?.maxWaitMs;
    const stored = this.writes.stored(json);
    const shard = this.shard(id);
    const call = callKey('schedule', id, retryMs, this.commandTimeoutMs, idempotencyKey, this.connection.clock);
    const write = () => this.writes.schedule(shard, { id, json: stored, time, onExists, maxWaitMs, call });
    // Only a call with a deadline can be refused as late: the others keep one promise per try.
    const result = await this.retried(
      name,
      id,
      retryMs,
      call?.deadline === undefined ? write : () => write().then(refuseLate),
    );
    return { id, runAt: result.runAt, changed: result.changed };
  }

  /**
   * Runs the queue's `@TaskSource` once now: every task it lists is written with `onExists` (`'keep'` by
   * default, or the queue's `reconcile.onExists`: a task Redis holds, scheduled, running or dead, is left
   * alone, a missing one is restored), many per script call per shard; with `sweep`, the scheduled tasks
   * it did not list are cancelled afterwards (never a running one). Rows it refuses (a bad id, time or
   * payload) are counted and logged, not fatal. A pass clears a data loss health reported. Rejects with
   * QueueConfigError when no provider method is its `@TaskSource`. See docs/delay-queue.md, "Task source".
   */
  async reconcile(options: ReconcileCallOptions = {}): Promise<ReconcileResult> {
    assertCallOptions('reconcile(options)', options, CALL_OPTIONS.reconcile);
    this.writes.flush();
    return this.reconciler.run(options, 'call');
  }

  /**
   * Runs the task `id` on a schedule: each tick of `every` (a cron expression, in `tz`, or every
   * `everyMs` ms) is an occurrence, a task of this queue carrying `payload`, handled by its
   * `@DelayConsumer` once across every process (`ctx.repeat`). Ticks follow from the schedule alone and
   * fall due by Redis' clock; the next is placed when an occurrence ends, so two never run at once.
   * Declaring the same schedule again (every replica at start) changes nothing; a changed one takes
   * effect at once, or when the running occurrence ends. See docs/recurring.md.
   */
  async repeat(id: string, every: RepeatEvery, payload?: T, options: RepeatOptions = {}): Promise<ScheduledRepeat> {
    const call = 'repeat(id, every, payload, options)';
    assertName(id, 'id');
    assertCallOptions(call, every, CALL_OPTIONS.repeatEvery);
    assertCallOptions(call, options, CALL_OPTIONS.repeat);
    const schedule = new RepeatSchedule(every, options);
    const json = payload === undefined ? 'null' : this.codec.encode(payload);
    this.writes.flush();
    const shard = this.shard(id);
    const declared = await this.occurrences.declare(shard, id, schedule, json);
    if (declared.status === 'ended') throw repeatEnded(id);
    if (declared.status === 'clock') throw repeatClockMoving(id);
    if (declared.status === 'changed') this.logger.log(`repeat "${id}" now runs on ${schedule.text}`);
    this.writes.hint(shard, { runAt: declared.nextRunAt, serverNow: this.connection.clock.estimate(), isHead: true });
    return { id, nextRunAt: declared.nextRunAt };
  }

  /** Stops a repeat: its pending occurrence is deleted, a running one finishes. True when it existed. */
  async unrepeat(id: string): Promise<boolean> {
    assertName(id, 'id');
    this.writes.flush();
    return this.store.unrepeat(this.shard(id), id);
  }

  /**
   * One page of the repeats, in no particular order; pass the returned cursor for the next page (null:
   * no more). A page holds about `limit` of them (Redis' HSCAN decides), and costs O(limit) per shard visited.
   */
  async repeats(options: PageOptions = {}): Promise<Page<RepeatInfo>> {
    assertCallOptions('repeats(page)', options, CALL_OPTIONS.page);
    return this.inspection.repeats(options);
  }

  /**
   * Moves a scheduled task to a new time. Null when there is no such task; TaskStateError when it is
   * running or dead. `retryMs` (or the queue's) and `idempotencyKey` as for `schedule`: applied once; a
   * `delayMs` counts from the try that Redis took.
   */
  async reschedule(id: string, time: RescheduleOptions): Promise<ScheduledTask | null> {
    const name = 'reschedule(id, time)';
    assertCallOptions(name, time, CALL_OPTIONS.reschedule);
    assertName(id, 'id');
    const [mode, ms] = resolveNewTime(time);
    return this.move(name, 'reschedule', id, mode, ms, time);
  }

  /**
   * Moves a scheduled task by `deltaMs` relative to its current time, atomically (`shift(id, -2 * 3600_000)`).
   * `retryMs` (or the queue's) and `idempotencyKey` as for `schedule`: a shift is applied once, so a task
   * is never moved twice by one call.
   */
  async shift(id: string, deltaMs: number, options?: WriteRetry): Promise<ScheduledTask | null> {
    const name = 'shift(id, deltaMs, options)';
    assertCallOptions(name, options, CALL_OPTIONS.retry);
    assertName(id, 'id');
    return this.move(name, 'shift', id, 'by', resolveDelta(deltaMs), options);
  }

  /**
   * Deletes a task in any state. True when it existed (after retries: when the try Redis applied found it).
   * A running task's `ctx.signal` aborts: at once in this process, at the next lease heartbeat in another.
   */
  async cancel(id: string, options?: WriteRetry): Promise<boolean> {
    const name = 'cancel(id, options)';
    assertCallOptions(name, options, CALL_OPTIONS.retry);
    assertName(id, 'id');
    this.writes.flush();
    const shard = this.shard(id);
    const retryMs = this.retryMs(options);
    const call = callKey('cancel', id, retryMs, this.commandTimeoutMs, options?.idempotencyKey, this.connection.clock);
    const cancelled = await this.retried(name, id, retryMs, () => this.store.cancel(shard, id, call));
    if (cancelled) this.consumers.taskEnded(this.name, id, taskCancelled(id));
    return cancelled;
  }

  async get(id: string): Promise<(TaskInfo<T> & { lastError?: string }) | null> {
    assertName(id, 'id');
    this.writes.flush();
    return this.inspection.get(this.shard(id), id);
  }

  /**
   * The `limit` most recently dead-lettered tasks (1 to 10,000), newest first; or, given
   * `{ cursor, limit }`, one page of them all (see `list('dead', ...)`).
   */
  deadLetters(limit?: number): Promise<DeadTask<T>[]>;
  deadLetters(page: PageOptions): Promise<Page<DeadTask<T>>>;
  async deadLetters(limitOrPage: number | PageOptions = 100): Promise<DeadTask<T>[] | Page<DeadTask<T>>> {
    if (typeof limitOrPage === 'object' && limitOrPage !== null) {
      assertCallOptions('deadLetters(page)', limitOrPage, CALL_OPTIONS.page);
      const { items, cursor } = await this.list('dead', limitOrPage);
      return { items: items as DeadTask<T>[], cursor };
    }
    const limit = limitOrPage;
    assertLimit(limit, 10_000);
    return this.inspection.deadLetters(limit);
  }

  /** Brings a dead-lettered task back with its attempts reset, due now unless a time is given. Null when it is not dead. */
  async requeue(id: string, time?: TaskTime): Promise<ScheduledTask | null> {
    assertCallOptions('requeue(id, time)', time, CALL_OPTIONS.taskTime);
    assertName(id, 'id');
    this.writes.flush();
    return this.writes.requeue(this.shard(id), id, resolveTime(time));
  }

  /**
   * Brings every dead-lettered task back, due now with attempts reset, in chunks of
   * DEAD_LETTERS_PER_CHUNK per script call (Redis serves others between them). Resolves with how many.
   */
  async requeueAll(): Promise<number> {
    this.writes.flush();
    return this.inspection.everyDeadLetter(async (shard, requeuedBefore) => {
      const { requeued, serverNow } = await this.store.requeueDeadChunk(shard);
      if (requeued > 0 && requeuedBefore === 0) this.writes.hint(shard, { runAt: serverNow, serverNow, isHead: true });
      return requeued;
    });
  }

  /**
   * Deletes the dead-lettered tasks that died at least `olderThan` ms ago (0, the default: all), in
   * chunks of DEAD_LETTERS_PER_CHUNK per script call. Resolves with how many.
   */
  async deleteDead(options: { olderThan?: number } = {}): Promise<number> {
    assertCallOptions('deleteDead(options)', options, CALL_OPTIONS.deleteDead);
    const { olderThan = 0 } = options;
    return this.inspection.everyDeadLetter((shard) => this.store.deleteDeadChunk(shard, olderThan));
  }

  /**
   * One page of the tasks in a state: `scheduled` by run time, `active` by lease end (soonest first),
   * `dead` newest first; pass the returned cursor for the next page (null: no more). Each page costs
   * O(shards × limit) whatever the number of tasks; a task moved between two pages may be listed
   * twice or not at all (an admin view, not a snapshot).
   */
  async list(state: TaskListState, options: PageOptions = {}): Promise<Page<ListedTask<T>>> {
    assertCallOptions('list(state, page)', options, CALL_OPTIONS.page);
    this.writes.flush();
    return this.inspection.list(state, options);
  }

  /** The next `limit` tasks to fall due (the heads of every shard's due index), soonest first. Costs O(shards × limit). */
  async upcoming(limit = 20): Promise<UpcomingTask[]> {
    assertLimit(limit, 1000);
    return this.inspection.upcoming(limit);
  }

  /**
   * Deletes every key of the queue: tasks in every state, dead letters, counters, and its record
   * (shards, layout), one short command per shard. Refused with QueueInUseError while consumers of the
   * queue run in this process, unless `{ force: true }`. Consumers of other processes are not seen:
   * stop them first, or their writes (a retry scheduled meanwhile) outlive it.
   */
  async obliterate(options?: ObliterateOptions): Promise<void> {
    assertCallOptions('obliterate(options)', options, CALL_OPTIONS.obliterate);
    await this.controls.obliterate(options?.force === true);
  }

  stats(): Promise<DelayQueueStats> {
    return this.store.stats();
  }

  /**
   * Clears this queue's data loss from health (in every process), once the application has dealt with
   * it: a loss is recorded when a process that had seen the queue's record in Redis finds it gone (its
   * data went with it). Resolves with whether a loss was recorded. A pass of its task source clears it too (see `reconcile`).
   */
  acknowledgeDataLoss(): Promise<boolean> {
    return this.controls.acknowledgeDataLoss();
  }

  /**
   * Stops every consumer of this queue, in every process, from claiming tasks: once this resolves no
   * claim hands one out (tasks running finish normally). Producers keep scheduling; due tasks wait.
   * The flag lives in Redis, so consumers started later stay paused too.
   */
  pause(): Promise<void> {
    return this.controls.pause();
  }

  /** Lets consumers claim again; tasks that fell due meanwhile are handed out at once (they are woken). */
  resume(): Promise<void> {
    return this.controls.resume();
  }

  /** Whether the queue is paused (any of its shards, should a pause() have failed half-way). */
  isPaused(): Promise<boolean> {
    return this.controls.isPaused();
  }

  private move(
    name: string,
    operation: 'reschedule' | 'shift',
    id: string,
    mode: 'at' | 'in' | 'by',
    ms: number,
    options: WriteRetry | undefined,
  ): Promise<ScheduledTask | null> {
    const retryMs = this.retryMs(options);
    const call = callKey(operation, id, retryMs, this.commandTimeoutMs, options?.idempotencyKey, this.connection.clock);
    return this.retried(name, id, retryMs, () => this.writes.move(operation, this.shard(id), id, mode, ms, call));
  }

  /**
   * A call on task `id` retried within `retryMs`; one that gives up (Redis away all along) owes a pass of
   * the task source, recorded once Redis answers again, which writes the task as the application's records say.
   */
  private retried<R>(name: string, id: string, retryMs: number, attempt: () => Promise<R>): Promise<R> {
    const run = this.retries.run(name, retryMs, attempt);
    if (retryMs <= 0) return run;
    return run.catch((error: unknown) => {
      if (error instanceof QueueConnectionError) this.reconciler.oweAfterGiveUp(id);
      throw error;
    });
  }

  /** A call's retry budget: its own `retryMs`, else the queue's. */
  private retryMs(options: WriteRetry | undefined): number {
    return options?.retryMs ?? this.options.retryMs;
  }

  /** @internal */
  shard(id: string): number {
    return shardOf(id, this.options.shards);
  }
}

/** A schedule's result, or LateTry when Redis refused the try as late (see the call-keys include). */
function refuseLate(written: ScheduleItemResult): ScheduleItemResult {
  if (written.late) throw new LateTry();
  return written;
}
