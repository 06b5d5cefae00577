import { Logger, OnModuleInit } from '@nestjs/common';
import { randomUUID } from 'node:crypto';
import type { QueueEvents } from '../events/queue-events';
import { TaskStateError } from '../errors';
import { QueueKeys, shardOf } from '../redis/keys';
import { QueueRecord } from '../redis/queue-meta';
import { RECURRING_QUEUE_PREFIX } from '../queue.constants';
import type { ConsumerRegistry } from '../consumer/consumer.registry';
import type { RedisConnection } from '../redis/redis-connection';
import type { QueueSettings } from '../queue.settings';
import { resolveDelayQueueOptions } from '../validation/delay-queue-options';
import { assertLimit, assertName, PayloadCodec } from '../validation/payload';
import { assertCallOptions, CALL_OPTIONS } from '../validation/call-options';
import { resolveDelta, resolveNewTime, resolveTime } from '../validation/time';
import { ScorePages } from '../redis/score-pages';
import { QueueError, QueueInputError } from '../errors';
import type {
  ListedTask,
  NoRetry,
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
import { byShard } from '../utils/by-shard';
import { newestOfShards } from '../redis/newest-first';
import { ShardBatcher } from '../redis/shard-batcher';
import { PauseFlag } from '../redis/pause-flag';
import { WakeHints } from '../redis/wake-hints';
import { WriteRetries } from '../redis/write-retry';
import { jsonFrom, storedJson, withCarrier } from '../redis/traced-json';
import { CreationContexts } from '../tracing/creation-contexts';
import { MESSAGE_COUNT, QueueTracer } from '../tracing/queue-tracer';
import {
  DEAD_LETTERS_PER_CHUNK,
  DelayQueueStore,
  type Placement,
  type ScheduleItem,
  type ScheduleItemResult,
  type ScheduleOutcome,
  type StoredTask,
} from './delay-queue.store';
import { RepeatOccurrences } from './repeat-occurrences';
import { TaskReconciler } from './task-reconciler';
import { RepeatSchedule } from './repeat-schedule';
import type { RecurringDeclareInput, RecurringDeclared } from '../recurring/lua/recurring-declare';
import { queueLogContext } from '../utils/log-line';

/**
 * Payload bytes (UTF-8, as Redis receives them) one schedule call carries, as for pushes: Redis runs one
 * script at a time, and a call's time grows with its bytes (ShardBatcher bounds its tasks).
 */
const MAX_SCHEDULE_BYTES = 1024 * 1024;

/** The sorted set each listed state is read from. */
const LISTED: Record<TaskListState, 'due' | 'active' | 'dead'> = { scheduled: 'due', active: 'active', dead: 'dead' };

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
  private readonly pauseFlag: PauseFlag;
  /** @internal Its record in Redis, whose loss says its data was lost. */
  readonly record: QueueRecord;
  /** @internal Wake-up hints of this queue from this process, its consumers' included. */
  readonly hints: WakeHints;
  /** Tracing on: each task carries its creation context (a move replaces it); each schedule call or move is a span. */
  private readonly tracer: QueueTracer | undefined;
  /** Schedules of one event-loop turn share one script call per shard (as pushes do). */
  private readonly scheduler: ShardBatcher<ScheduleItem, ScheduleItemResult>;
  private readonly occurrences: RepeatOccurrences;
  /** The calls safe to repeat, retried within their `retryMs`. */
  private readonly retries = new WriteRetries();
  private readonly logger: Logger;
  /** @internal Runs its `@TaskSource`. */
  readonly reconciler: TaskReconciler;

  /** @internal Made by Nest (QueueModule), not by the application. */
  constructor(
    options: DelayQueueOptions,
    private readonly connection: RedisConnection,
    settings: QueueSettings,
    private readonly events: QueueEvents,
    private readonly consumers: ConsumerRegistry,
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
      !this.name.startsWith(RECURRING_QUEUE_PREFIX),
    );
    this.hints = WakeHints.of(connection, this.store.keys.wakeChannel, this.options.shards, settings.idlePollMs);
    this.pauseFlag = new PauseFlag(connection.scripts, this.store.keys, this.options.shards, this.hints);
    this.occurrences = new RepeatOccurrences(this.store, connection.clock);
    this.scheduler = new ShardBatcher((shard, items) => this.scheduleBatch(shard, items));
    this.tracer = (this.options.tracing ?? settings.tracing) ? new QueueTracer(this.name, 'delay') : undefined;
    connection.holdsWrites(this.scheduler);
    connection.holdsWrites(this.retries);
    this.reconciler = new TaskReconciler({
      queue: this.name,
      shards: this.options.shards,
      store: this.store,
      record: this.record,
      events,
      defaults: this.options.reconcile,
      encode: (payload) => this.codec.encode(payload),
      shardOf: (id) => this.shard(id),
      written: (shard, { serverNow, head, results }, sentAt) => {
        connection.clock.observe(serverNow, sentAt);
        if (results.some((result) => result.changed && result.runAt === head))
          this.hint(shard, { runAt: head, serverNow, isHead: true });
      },
    });
  }

  async onModuleInit(): Promise<void> {
    await this.record.assert();
  }

  /**
   * Schedules a task at `runAt` or after `delayMs` (Redis time); neither means now. An existing task with
   * the same id is replaced (new payload, new time), or kept, or either by whichever time is earlier or
   * later (`onExists`); `debounce` pushes it back on each schedule, never past `maxWaitMs` after the one
   * that created it. The result says the task's time now, and whether this call changed it. With an id,
   * `retryMs` (or the queue's) retries it when Redis did not take it (see `WriteRetry`); a relative time
   * then counts from the try that Redis takes.
   */
  async schedule(payload: T, options: ScheduleOptions = {}): Promise<ScheduleResult> {
    const call = 'schedule(payload, options)';
    assertCallOptions(call, options, CALL_OPTIONS.schedule);
    const retryMs = options.id === undefined ? 0 : this.retryMs(options);
    const id = options.id ?? randomUUID();
    const time = resolveTime(options);
    const onExists = options.onExists ?? (options.replace === false ? 'keep' : 'replace');
    const json = this.codec.encode(payload);
    const maxWaitMs = options.debounce?.maxWaitMs;
    const carrier = this.tracer?.creation();
    const stored = carrier === undefined ? json : withCarrier(carrier, json);
    const shard = this.shard(id);
    const result = await this.retries.run(call, retryMs, () =>
      this.scheduler.add(shard, { id, json: stored, time, onExists, maxWaitMs }),
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
    this.scheduler.flush();
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
    this.scheduler.flush();
    const shard = this.shard(id);
    const declared = await this.occurrences.declare(shard, id, schedule, json);
    if (declared.status === 'ended')
      throw new QueueInputError(`repeat "${id}": its schedule has no tick after now (see endAt); nothing was written`);
    if (declared.status === 'clock')
      throw new QueueError(`repeat "${id}": Redis' clock kept moving away from this process' estimate; try again`);
    if (declared.status === 'changed') this.logger.log(`repeat "${id}" now runs on ${schedule.text}`);
    this.hint(shard, { runAt: declared.nextRunAt, serverNow: this.connection.clock.estimate(), isHead: true });
    return { id, nextRunAt: declared.nextRunAt };
  }

  /**
   * @internal Declares the `@Recurring` schedule `id` for this process (see recurring-declare.lua), and
   * wakes the consumers when an occurrence was placed.
   */
  async declareRecurring(
    id: string,
    declaration: Omit<RecurringDeclareInput, 'id' | 'window' | 'windowFor'>,
    expected: string,
  ): Promise<RecurringDeclared> {
    const shard = this.shard(id);
    const declared = await this.occurrences.declareRecurring(shard, { id, ...declaration }, expected);
    if (declared.status === 'created' || declared.status === 'changed')
      this.hint(shard, { runAt: declared.nextRunAt, serverNow: this.connection.clock.estimate(), isHead: true });
    return declared;
  }

  /** Stops a repeat: its pending occurrence is deleted, a running one finishes. True when it existed. */
  async unrepeat(id: string): Promise<boolean> {
    assertName(id, 'id');
    this.scheduler.flush();
    return this.store.unrepeat(this.shard(id), id);
  }

  /**
   * One page of the repeats, in no particular order; pass the returned cursor for the next page (null:
   * no more). A page holds about `limit` of them (Redis' HSCAN decides), and costs O(limit) per shard visited.
   */
  async repeats(options: PageOptions = {}): Promise<Page<RepeatInfo>> {
    assertCallOptions('repeats(page)', options, CALL_OPTIONS.page);
    const { cursor = '0:0', limit = 100 } = options;
    const at = typeof cursor === 'string' ? /^(\d+):(\d+)$/.exec(cursor) : null;
    if (at === null || Number(at[1]) >= this.options.shards)
      throw new QueueInputError(`repeats: cursor must be one returned by an earlier page, got ${String(cursor)}`);
    let shard = Number(at[1]);
    let scan = at[2];
    const items: RepeatInfo[] = [];
    while (items.length < limit) {
      const step = await this.store.scanRepeats(shard, scan, limit - items.length);
      items.push(...step.repeats);
      scan = step.cursor;
      if (scan !== '0') continue;
      shard += 1;
      if (shard === this.options.shards) return { items, cursor: null };
    }
    return { items, cursor: `${shard}:${scan}` };
  }

  /**
   * Moves a scheduled task to a new time. Null when there is no such task; TaskStateError when it is
   * running or dead. `retryMs` (or the queue's) retries it when Redis did not take it; a `delayMs` then
   * counts from the try that Redis takes.
   */
  async reschedule(id: string, time: RescheduleOptions): Promise<ScheduledTask | null> {
    const call = 'reschedule(id, time)';
    assertCallOptions(call, time, CALL_OPTIONS.reschedule);
    assertName(id, 'id');
    const [mode, ms] = resolveNewTime(time);
    return this.retries.run(call, this.retryMs(time), () => this.move('reschedule', id, mode, ms));
  }

  /**
   * Moves a scheduled task by `deltaMs` relative to its current time, atomically (`shift(id, -2 * 3600_000)`).
   * Not safe to repeat (a repeated try would move it twice): `retryMs` is refused.
   */
  async shift(id: string, deltaMs: number, options?: NoRetry): Promise<ScheduledTask | null> {
    assertCallOptions('shift(id, deltaMs, options)', options, CALL_OPTIONS.shift);
    assertName(id, 'id');
    return this.move('shift', id, 'by', resolveDelta(deltaMs));
  }

  /**
   * Deletes a task in any state. True when it existed (after retries: when the try Redis took found it).
   * A running task's `ctx.signal` aborts: at once in this process, at the next lease heartbeat in another.
   */
  async cancel(id: string, options?: WriteRetry): Promise<boolean> {
    const call = 'cancel(id, options)';
    assertCallOptions(call, options, CALL_OPTIONS.retry);
    assertName(id, 'id');
    this.scheduler.flush();
    const shard = this.shard(id);
    const cancelled = await this.retries.run(call, this.retryMs(options), () => this.store.cancel(shard, id));
    if (cancelled) this.consumers.taskEnded(this.name, id, new Error(`task "${id}" was cancelled`));
    return cancelled;
  }

  async get(id: string): Promise<(TaskInfo<T> & { lastError?: string }) | null> {
    assertName(id, 'id');
    this.scheduler.flush();
    const task = await this.store.get(this.shard(id), id);
    return task && this.toInfo(id, task);
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
    const newest = await newestOfShards(this.options.shards, limit, (shard) => this.store.dead(shard, limit));
    return newest.map((task) => ({ ...this.toInfo(task.id, task), diedAt: task.diedAt }));
  }

  /** Brings a dead-lettered task back with its attempts reset, due now unless a time is given. Null when it is not dead. */
  async requeue(id: string, time?: TaskTime): Promise<ScheduledTask | null> {
    assertCallOptions('requeue(id, time)', time, CALL_OPTIONS.taskTime);
    assertName(id, 'id');
    this.scheduler.flush();
    const shard = this.shard(id);
    const placed = await this.hints.after(shard, this.store.requeue(shard, id, resolveTime(time)));
    if (!placed) return null;
    this.hint(shard, placed);
    return { id, runAt: placed.runAt };
  }

  /**
   * Brings every dead-lettered task back, due now with attempts reset, in chunks of
   * DEAD_LETTERS_PER_CHUNK per script call (Redis serves others between them). Resolves with how many.
   */
  async requeueAll(): Promise<number> {
    this.scheduler.flush();
    const counts = await Promise.all(
      Array.from({ length: this.options.shards }, async (_, shard) => {
        let total = 0;
        for (;;) {
          const { requeued, serverNow } = await this.store.requeueDeadChunk(shard);
          total += requeued;
          if (requeued > 0 && total === requeued) this.hint(shard, { runAt: serverNow, serverNow, isHead: true });
          if (requeued < DEAD_LETTERS_PER_CHUNK) return total;
        }
      }),
    );
    return counts.reduce((sum, count) => sum + count, 0);
  }

  /**
   * Deletes the dead-lettered tasks that died at least `olderThan` ms ago (0, the default: all), in
   * chunks of DEAD_LETTERS_PER_CHUNK per script call. Resolves with how many.
   */
  async deleteDead(options: { olderThan?: number } = {}): Promise<number> {
    assertCallOptions('deleteDead(options)', options, CALL_OPTIONS.deleteDead);
    const { olderThan = 0 } = options;
    const counts = await Promise.all(
      Array.from({ length: this.options.shards }, async (_, shard) => {
        let total = 0;
        for (;;) {
          const deleted = await this.store.deleteDeadChunk(shard, olderThan);
          total += deleted;
          if (deleted < DEAD_LETTERS_PER_CHUNK) return total;
        }
      }),
    );
    return counts.reduce((sum, count) => sum + count, 0);
  }

  /**
   * One page of the tasks in a state: `scheduled` by run time, `active` by lease end (soonest first),
   * `dead` newest first; pass the returned cursor for the next page (null: no more). Each page costs
   * O(shards × limit) whatever the number of tasks; a task moved between two pages may be listed
   * twice or not at all (an admin view, not a snapshot).
   */
  async list(state: TaskListState, options: PageOptions = {}): Promise<Page<ListedTask<T>>> {
    assertCallOptions('list(state, page)', options, CALL_OPTIONS.page);
    const { cursor, limit = 100 } = options;
    const kind = Object.hasOwn(LISTED, state) ? LISTED[state] : undefined;
    if (kind === undefined)
      throw new QueueInputError(`list: state must be 'scheduled', 'active' or 'dead', got ${String(state)}`);
    this.scheduler.flush();
    const pages = new ScorePages(this.options.shards, state === 'dead');
    const page = await pages.page(cursor, limit, (shard, score, skip, count) =>
      this.store.range(shard, kind, state === 'dead', score, skip, count),
    );
    const details = new Map<string, Awaited<ReturnType<DelayQueueStore['details']>>[number]>();
    await Promise.all(
      [...byShard(page.items)].map(async ([shard, listed]) => {
        const ids = listed.map(({ member }) => member);
        for (const detail of await this.store.details(shard, ids)) details.set(`${shard}:${detail.id}`, detail);
      }),
    );
    const items: ListedTask<T>[] = [];
    for (const { shard, member, score } of page.items) {
      const { json, run, lastError } = details.get(`${shard}:${member}`)!;
      // Completed or cancelled between the two reads.
      if (json === null) continue;
      // '<attempts>:<token>:<runAt>' of the latest delivery; none before the first.
      const [attempts, , ranAt] = (run ?? '0::').split(':');
      items.push({
        id: member,
        state,
        runAt: state === 'scheduled' ? score : Number(ranAt),
        attempts: Number(attempts),
        payload: JSON.parse(storedJson(json)) as T,
        ...(state === 'active' && { leaseEndsAt: score }),
        ...(state === 'dead' && { diedAt: score }),
        ...(lastError !== null && { lastError }),
      });
    }
    return { items, cursor: page.cursor };
  }

  /** The next `limit` tasks to fall due (the heads of every shard's due index), soonest first. Costs O(shards × limit). */
  async upcoming(limit = 20): Promise<UpcomingTask[]> {
    assertLimit(limit, 1000);
    const heads = await this.store.dueHeads(limit);
    return heads.sort((a, b) => a.runAt - b.runAt).slice(0, limit);
  }

  /**
   * Deletes every key of the queue: tasks in every state, dead letters, counters, and its record
   * (shards, layout), one short command per shard. Refused with QueueInUseError while consumers of the
   * queue run in this process, unless `{ force: true }`. Consumers of other processes are not seen:
   * stop them first, or their writes (a retry scheduled meanwhile) outlive it.
   */
  async obliterate(options?: ObliterateOptions): Promise<void> {
    assertCallOptions('obliterate(options)', options, CALL_OPTIONS.obliterate);
    this.consumers.assertObliterable('delay', this.name, options?.force === true);
    // Schedules made before the call are deleted too.
    this.scheduler.flush();
    await Promise.all(Array.from({ length: this.options.shards }, (_, shard) => this.store.obliterate(shard)));
    await this.record.delete();
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
    return this.record.acknowledgeLoss();
  }

  /**
   * Stops every consumer of this queue, in every process, from claiming: once this resolves no claim
   * hands anything out (work in flight finishes normally). Producers keep writing; due work waits.
   * The flag lives in Redis, so consumers started later stay paused too.
   */
  async pause(): Promise<void> {
    await this.pauseFlag.switch(true);
    if (this.events.has('queue.paused')) this.events.emit('queue.paused', { queue: this.name, kind: 'delay' });
  }

  /** Lets consumers claim again; work that fell due meanwhile is handed out at once (they are woken). */
  async resume(): Promise<void> {
    await this.pauseFlag.switch(false);
    if (this.events.has('queue.resumed')) this.events.emit('queue.resumed', { queue: this.name, kind: 'delay' });
  }

  /** Whether the queue is paused (any of its shards, should a pause() have failed half-way). */
  isPaused(): Promise<boolean> {
    return this.pauseFlag.read();
  }

  /** A call's retry budget: its own `retryMs`, else the queue's. */
  private retryMs(options: WriteRetry | undefined): number {
    return options?.retryMs ?? this.options.retryMs;
  }

  /** @internal */
  shard(id: string): number {
    return shardOf(id, this.options.shards);
  }

  private async move(
    operation: 'reschedule' | 'shift',
    id: string,
    mode: 'at' | 'in' | 'by',
    ms: number,
  ): Promise<ScheduledTask | null> {
    this.scheduler.flush();
    const shard = this.shard(id);
    const placed = await this.hints.after(
      shard,
      this.tracer === undefined
        ? this.store.move(shard, id, mode, ms)
        : this.tracer.sendOne(operation, { 'messaging.message.id': id }, (carrier) =>
            this.store.move(shard, id, mode, ms, carrier),
          ),
    );
    if (placed === 'missing') return null;
    if (typeof placed === 'string') throw new TaskStateError(id, placed);
    this.hint(shard, placed);
    return { id, runAt: placed.runAt };
  }

  private toInfo(id: string, task: StoredTask): TaskInfo<T> & { lastError?: string } {
    return {
      id,
      state: task.state,
      runAt: task.runAt,
      attempts: task.attempts,
      payload: JSON.parse(storedJson(task.json)) as T,
      ...(task.lastError !== undefined ? { lastError: task.lastError } : {}),
    };
  }

  /** A turn's schedules for one shard, in calls of at most MAX_SCHEDULE_BYTES of payloads each, in order. */
  private async scheduleBatch(shard: number, items: ScheduleItem[]): Promise<ScheduleItemResult[]> {
    const calls: ScheduleItem[][] = [];
    let call: ScheduleItem[] = [];
    let bytes = 0;
    for (const item of items) {
      const size = Buffer.byteLength(item.json);
      if (call.length > 0 && bytes + size > MAX_SCHEDULE_BYTES) {
        calls.push(call);
        call = [];
        bytes = 0;
      }
      call.push(item);
      bytes += size;
    }
    calls.push(call);
    if (calls.length === 1) return this.scheduleCall(shard, items);
    return (await Promise.all(calls.map((each) => this.scheduleCall(shard, each)))).flat();
  }

  private async scheduleCall(shard: number, items: ScheduleItem[]): Promise<ScheduleItemResult[]> {
    const sentAt = Date.now();
    const { serverNow, head, results } = await this.hints.after(
      shard,
      this.tracer === undefined ? this.store.schedule(shard, items) : this.sendTraced(this.tracer, shard, items),
    );
    this.connection.clock.observe(serverNow, sentAt);
    if (results.some((result) => result.changed && result.runAt === head))
      this.hint(shard, { runAt: head, serverNow, isHead: true });
    if (this.events.has('tasks.scheduled')) {
      this.events.emit('tasks.scheduled', {
        queue: this.name,
        count: results.filter((result) => result.changed).length,
      });
    }
    return results;
  }

  /** One schedule call of a traced queue: its send span, linked to the creation contexts of its tasks. */
  private sendTraced(tracer: QueueTracer, shard: number, items: ScheduleItem[]): Promise<ScheduleOutcome> {
    const origins = new CreationContexts();
    for (const item of items) origins.add(item.json);
    return tracer.send('send', origins, { [MESSAGE_COUNT]: origins.count }, (carrier) => {
      // Tasks scheduled outside any trace carry this span's context.
      if (carrier !== undefined)
        for (const item of items) if (jsonFrom(item.json, 0) === 0) item.json = withCarrier(carrier, item.json);
      return this.store.schedule(shard, items);
    });
  }

  /** Wakes sleeping pollers (in any process) when a task became its shard's earliest. */
  private hint(shard: number, placed: Placement): void {
    if (placed.isHead) this.hints.publish(shard, placed.runAt, placed.serverNow);
  }
}
