import { pushManyNotArray, pushManyTooMany, pushManyTooLarge } from './fixed-queue.messages';
import { Logger, OnModuleDestroy, OnModuleInit } from '@nestjs/common';
import type { QueueEvents } from '../events/queue-events';
import { entryMessage, entryTime } from './fixed-entry';
import { QueueKeys, shardOf } from '../redis/keys';
import type { RedisConnection } from '../redis/redis-connection';
import type { ServerClock } from '../redis/server-clock';
import { QueueRecord } from '../redis/queue-meta';
import type { ConsumerRegistry } from '../consumer/consumer.registry';
import type { QueueSettings } from '../queue.settings';
import { resolveFixedQueueOptions } from '../validation/fixed-queue-options';
import { assertLimit, assertName, PayloadCodec } from '../validation/payload';
import { assertCallOptions, CALL_OPTIONS } from '../validation/call-options';
import type {
  DeadBatch,
  FixedQueueOptions,
  FixedQueueStats,
  GroupListing,
  GroupSummary,
  ObliterateOptions,
  Page,
  PageOptions,
  PausedGroup,
  PeekedMessage,
  PushResult,
  ResolvedFixedQueueOptions,
  WriteRetry,
} from '../interfaces';
import { callKey, type CallKey } from '../redis/call-keys';
import { WriteRetries } from '../redis/write-retry';
import { ScanPages } from '../redis/scan-pages';
import { ScorePages } from '../redis/score-pages';
import { byShard } from '../utils/by-shard';
import { newestOfShards } from '../redis/newest-first';
import { PauseFlag } from '../redis/pause-flag';
import { WakeHints } from '../redis/wake-hints';
import { FixedQueueListings } from './fixed-queue.listings';
import { FixedQueueStore, type DeadRecord } from './fixed-queue.store';
import { GroupExpiry } from './group-expiry';
import { MAX_BYTES_PER_CALL, MAX_MESSAGES_PER_CALL, type PushCoalescer } from './push-coalescer';
import { pushWrites } from './push-writes';
import { queueLogContext } from '../utils/log-line';
import { withCarrier } from '../redis/traced-json';
import { QueueTracer } from '../tracing/queue-tracer';
import { QueueControls } from '../queue-controls';

/**
 * Many small bounded queues, one per group: pushes beyond `capacity` evict the group's oldest
 * messages, and consumers receive batches of one group, built for "collect a lot, report in batches"
 * traffic. At-most-once by default (a claimed batch has left Redis: tolerate loss), or at-least-once
 * with `delivery: 'at-least-once'` (leases, redelivery, dead letters).
 */
export class FixedQueue<T = unknown> implements OnModuleInit, OnModuleDestroy {
  readonly name: string;
  /** Its options as it runs with them: validated, every default applied. */
  readonly options: Readonly<ResolvedFixedQueueOptions>;
  /** @internal Its keys, scripts and replies: for tests that look underneath. */
  readonly store: FixedQueueStore;
  private readonly codec: PayloadCodec;
  private readonly pauseFlag: PauseFlag;
  private readonly coalescer: PushCoalescer;
  /** Pause, data loss and obliterate, answered as every kind of queue answers them. */
  private readonly controls: QueueControls;
  private readonly listings: FixedQueueListings;
  private readonly expiry: GroupExpiry;
  /** @internal Its record in Redis, whose loss says its data was lost. */
  readonly record: QueueRecord;
  /** @internal Wake-up hints of this queue from this process, its consumers' included. */
  readonly hints: WakeHints;
  /** Tracing on: each message carries its creation context, and each script call is a send span. */
  private readonly tracer: QueueTracer | undefined;
  /** Pushes given a `retryMs`, retried within it. */
  private readonly retries = new WriteRetries();
  private readonly commandTimeoutMs: number;
  /** This process' estimate of Redis' clock: a retried push's deadline is set from it. */
  private readonly clock: ServerClock;

  /** @internal Made by Nest (QueueModule), not by the application. */
  constructor(
    options: FixedQueueOptions,
    connection: RedisConnection,
    settings: QueueSettings,
    private readonly events: QueueEvents,
    consumers: ConsumerRegistry,
  ) {
    this.options = resolveFixedQueueOptions(options, `fixed queue "${options?.name}"`, (warning) =>
      new Logger(queueLogContext(options.name)).warn(warning),
    );
    this.name = this.options.name;
    this.codec = new PayloadCodec(
      this.name,
      this.options.maxPayloadBytes ?? settings.maxPayloadBytes,
      this.options.schema,
    );
    this.store = new FixedQueueStore(
      connection.scripts,
      new QueueKeys(settings.prefix, this.name, this.options.shards),
      this.options,
    );
    this.record = new QueueRecord(connection, this.store.keys, this.name, 'fixed', this.options.shards, true);
    this.hints = WakeHints.of(connection, this.store.keys.wakeChannel, this.options.shards, settings.idlePollMs);
    this.pauseFlag = new PauseFlag(connection.scripts, this.store.keys, this.options.shards, this.hints);
    this.tracer = (this.options.tracing ?? settings.tracing) ? new QueueTracer(this.name, 'fixed') : undefined;
    this.listings = new FixedQueueListings(connection.scripts, this.store.keys, this.options.shards);
    this.coalescer = pushWrites({
      queue: this.name,
      shards: this.options.shards,
      store: this.store,
      hints: this.hints,
      clock: connection.clock,
      events,
      tracer: this.tracer,
    });
    connection.holdsWrites(this.coalescer);
    connection.holdsWrites(this.retries);
    this.commandTimeoutMs = settings.commandTimeoutMs;
    this.clock = connection.clock;
    this.controls = new QueueControls('fixed', this, this.pauseFlag, events, consumers, () => this.coalescer.flush());
    this.expiry = new GroupExpiry(
      this.store,
      this.options.shards,
      this.options.ttlMs,
      this.name,
      new Logger(queueLogContext(this.name)),
      (group, count) => {
        if (events.has('messages.expired')) events.emit('messages.expired', { queue: this.name, group, count });
      },
    );
  }

  async onModuleInit(): Promise<void> {
    await this.record.assert(async () => {
      await Promise.all(Array.from({ length: this.options.shards }, (_, shard) => this.store.upgrade(shard)));
      this.expiry.start();
    });
  }

  onModuleDestroy(): void {
    this.expiry.stop();
  }

  /**
   * Appends a message to a group. Resolves once it is stored, with the number of older messages evicted.
   * With `retryMs` it is tried again while Redis does not answer, and with an `idempotencyKey` the
   * application may send it again itself: either way it is stored once (see `WriteRetry`).
   */
  push(group: string, message: T, options?: WriteRetry): Promise<PushResult> {
    // Not an async function: the hot path keeps one promise per push. Refusals reject it all the same.
    let json: string;
    let call: CallKey | undefined;
    try {
      if (options !== undefined) {
        assertCallOptions('push(group, message, options)', options, CALL_OPTIONS.retry);
        call = callKey('push', group, options.retryMs ?? 0, this.commandTimeoutMs, options.idempotencyKey, this.clock);
      }
      assertName(group, 'group');
      json = this.codec.encode(message);
    } catch (error) {
      return Promise.reject(error as Error);
    }
    const carrier = this.tracer?.creation();
    const stored = carrier === undefined ? json : withCarrier(carrier, json);
    // The carrier is ASCII: its bytes are its length, and its marker's (`0,"` and `",`) five.
    const bytes = Buffer.byteLength(json) + (carrier === undefined ? 0 : carrier.length + 5);
    if (call === undefined) return this.coalescer.add(group, stored, bytes);
    return this.retries.run('push(group, message, options)', options?.retryMs ?? 0, () =>
      this.coalescer.add(group, stored, bytes, call),
    );
  }

  /**
   * Appends several messages to a group in one atomic write, in order. `retryMs` and `idempotencyKey`
   * as for `push`: the messages are stored once.
   */
  async pushMany(group: string, messages: readonly T[], options?: WriteRetry): Promise<PushResult> {
    const name = 'pushMany(group, messages, options)';
    assertCallOptions(name, options, CALL_OPTIONS.retry);
    assertName(group, 'group');
    if (!Array.isArray(messages)) throw pushManyNotArray(messages);
    if (messages.length > MAX_MESSAGES_PER_CALL) throw pushManyTooMany(MAX_MESSAGES_PER_CALL, messages.length);
    if (messages.length === 0) return { dropped: 0 };
    let bytes = 0;
    const encoded = messages.map((message) => {
      const json = this.codec.encode(message);
      bytes += Buffer.byteLength(json);
      return json;
    });
    const carrier = this.tracer?.creation();
    const stored = carrier === undefined ? encoded : encoded.map((json) => withCarrier(carrier, json));
    if (carrier !== undefined) bytes += encoded.length * (carrier.length + 5);
    // One atomic write is one script call, which must stay short (see MAX_BYTES_PER_CALL).
    if (bytes > MAX_BYTES_PER_CALL) throw pushManyTooLarge(MAX_BYTES_PER_CALL, bytes);
    const retryMs = options?.retryMs ?? 0;
    const call = callKey('push', group, retryMs, this.commandTimeoutMs, options?.idempotencyKey, this.clock);
    return this.retries.run(name, retryMs, () => this.coalescer.add(group, stored, bytes, call));
  }

  /** Messages a group holds now (including any not yet discarded for age). */
  async size(group: string): Promise<number> {
    assertName(group, 'group');
    return this.store.size(shardOf(group, this.options.shards), group);
  }

  /** Totals over every shard, read from counters the scripts keep: its cost does not grow with the groups. */
  stats(): Promise<FixedQueueStats> {
    return this.store.stats();
  }

  /**
   * The groups most in need of a consumer: the heads of every shard's ready index (a full group is due
   * now, the others by their oldest message), largest first. Costs O(shards × limit), whatever the
   * number of groups: meant for dashboards, not for finding every group.
   */
  async hottestGroups(limit = 10): Promise<GroupSummary[]> {
    assertLimit(limit, 1000);
    const heads = await this.listings.readyHeads(limit);
    return heads.sort((a, b) => b.size - a.size || a.dueAt - b.dueAt).slice(0, limit);
  }

  /**
   * The newest dead batches (at-least-once queues: batches that failed their last attempt), newest
   * first. Costs O(shards × limit).
   */
  deadLetters(limit?: number): Promise<DeadBatch<T>[]>;
  /** One page of every dead batch, newest first; pass the returned cursor for the next (null: no more). O(shards × limit). */
  deadLetters(page: PageOptions): Promise<Page<DeadBatch<T>>>;
  async deadLetters(limitOrPage: number | PageOptions = 100): Promise<DeadBatch<T>[] | Page<DeadBatch<T>>> {
    if (typeof limitOrPage === 'object' && limitOrPage !== null) {
      assertCallOptions('deadLetters(page)', limitOrPage, CALL_OPTIONS.page);
      return this.deadLetterPage(limitOrPage);
    }
    const limit = limitOrPage;
    assertLimit(limit, 1000);
    const newest = await newestOfShards(this.options.shards, limit, (shard) => this.store.dead(shard, limit));
    return newest.map((record) => this.toDeadBatch(record));
  }

  /**
   * The oldest `limit` messages of a group (1 to 1,000), each with its push time: what its next batch
   * would hold (an ordered at-least-once group's head is its unacknowledged batch). Messages older than
   * `maxAgeMs` still show until a consumer claims the group and discards them.
   */
  async peek(group: string, limit = 10): Promise<PeekedMessage<T>[]> {
    assertName(group, 'group');
    assertLimit(limit, 1000);
    const entries = await this.store.head(shardOf(group, this.options.shards), group, limit);
    return entries.map((entry) => ({ message: entryMessage<T>(entry), pushedAt: entryTime(entry) }));
  }

  /**
   * One page of the groups holding messages, in no particular order; pass the returned cursor for the
   * next page (null: no more). An admin read, never for a hot path: each page costs a few bounded ZSCAN
   * steps over the shards' group indexes and an LLEN per group, whatever the number of groups. A page may hold fewer than
   * `limit` groups before the end; a group added or emptied meanwhile may be missed or listed twice.
   */
  async groups(page: PageOptions = {}): Promise<Page<GroupListing>> {
    assertCallOptions('groups(page)', page, CALL_OPTIONS.page);
    const { cursor, limit = 100 } = page;
    return new ScanPages(this.options.shards).page(cursor, limit, (shard, scan, count) =>
      this.listings.scanGroups(shard, scan, count),
    );
  }

  private async deadLetterPage({ cursor, limit = 100 }: PageOptions): Promise<Page<DeadBatch<T>>> {
    const page = await new ScorePages(this.options.shards, true).page(cursor, limit, (shard, score, skip, count) =>
      this.listings.deadRange(shard, score, skip, count),
    );
    const records = new Map<string, DeadRecord>();
    await Promise.all(
      [...byShard(page.items)].map(async ([shard, listed]) => {
        const ids = listed.map(({ member }) => member);
        for (const record of await this.listings.deadRecords(shard, ids)) if (record) records.set(record.id, record);
      }),
    );
    const items: DeadBatch<T>[] = [];
    // Re-queued or trimmed between the two reads: gone from the page.
    for (const { member } of page.items) if (records.has(member)) items.push(this.toDeadBatch(records.get(member)!));
    return { items, cursor: page.cursor };
  }

  private toDeadBatch({ entries, ...record }: DeadRecord): DeadBatch<T> {
    return {
      ...record,
      pushedAt: entries.map(entryTime),
      messages: entries.map((entry) => entryMessage<T>(entry)),
    };
  }

  /**
   * Appends a dead batch's messages to its group again, as if pushed now (so `maxAgeMs` counts from
   * now, and capacity evicts the oldest as a push does), attempts starting over. Null when no dead batch
   * has that id.
   */
  async requeue(id: string): Promise<{ id: string; dropped: number } | null> {
    assertName(id, 'id');
    const shard = Number(id.slice(0, id.indexOf('.')));
    if (!Number.isInteger(shard) || shard < 0 || shard >= this.options.shards || !id.includes('.')) return null;
    const placed = await this.store.requeue(shard, id);
    if (!placed) return null;
    // Its reply carries no server time: due now as far as the hint goes.
    if (placed.wakeAt >= 0) this.hints.now(shard);
    return { id, dropped: placed.dropped };
  }

  /**
   * Deletes a group's messages now, counted as `dropped` in `stats()`, and resolves with how many. A
   * batch of the group being handled (ordered queues) finishes as usual; its acknowledgement then
   * removes nothing pushed after the clear.
   */
  async clear(group: string): Promise<{ dropped: number }> {
    assertName(group, 'group');
    // Pushes made before the clear are cleared too.
    this.coalescer.flush();
    return { dropped: await this.store.clear(shardOf(group, this.options.shards), group) };
  }

  /**
   * Deletes every key of the queue: messages of every group, dead batches, counters, and its record
   * (shards, layout), a bounded page per script call so Redis is never blocked for long. Refused with
   * QueueInUseError while consumers of the queue run in this process, unless `{ force: true }`.
   * Consumers of other processes are not seen: stop them first, or their writes (a batch acknowledged
   * meanwhile, a push) outlive it.
   */
  async obliterate(options?: ObliterateOptions): Promise<void> {
    assertCallOptions('obliterate(options)', options, CALL_OPTIONS.obliterate);
    await this.controls.obliterate(options?.force === true);
  }

  /**
   * Clears this queue's data loss from health (in every process), once the application has dealt with
   * it: a loss is recorded when a process that had seen the queue's record in Redis finds it gone (its
   * data went with it). Resolves with whether a loss was recorded.
   */
  acknowledgeDataLoss(): Promise<boolean> {
    return this.controls.acknowledgeDataLoss();
  }

  /**
   * Stops every consumer of this queue, in every process, from claiming: once this resolves no claim
   * hands anything out (work in flight finishes normally). Producers keep writing; due work waits.
   * The flag lives in Redis, so consumers started later stay paused too.
   */
  pause(): Promise<void> {
    return this.controls.pause();
  }

  /** Lets consumers claim again; work that fell due meanwhile is handed out at once (they are woken). */
  resume(): Promise<void> {
    return this.controls.resume();
  }

  /**
   * Stops every consumer, in every process, from claiming anything of `group`, and resolves once no claim
   * does: its pushes still land (within `capacity`; `maxAgeMs` discards what grew too old before it
   * resumes), a batch of it already being handled finishes (and its acknowledgement leaves the group
   * paused). False when it was paused already. Costs O(log N), and nothing to other groups' claims: the
   * group leaves its shard's ready index. The pause lives in Redis, with the group's name, until
   * `resumeGroup`.
   */
  async pauseGroup(group: string): Promise<boolean> {
    assertName(group, 'group');
    const paused = await this.store.pauseGroup(shardOf(group, this.options.shards), group);
    if (paused && this.events.has('group.paused'))
      this.events.emit('group.paused', { queue: this.name, group, reason: 'manual' });
    return paused;
  }

  /**
   * Lets consumers claim a paused group again; what it holds is handed out by the usual rule (now when
   * it holds a full batch or its oldest message waited `maxWaitMs`), consumers of every process woken.
   * False when it was not paused.
   */
  async resumeGroup(group: string): Promise<boolean> {
    assertName(group, 'group');
    const shard = shardOf(group, this.options.shards);
    const { resumed, dueAt, serverNow } = await this.store.resumeGroup(shard, group);
    if (!resumed) return false;
    if (dueAt >= 0) this.hints.publish(shard, dueAt, serverNow);
    if (this.events.has('group.resumed')) this.events.emit('group.resumed', { queue: this.name, group });
    return true;
  }

  /**
   * One page of the paused groups, in no particular order; pass the returned cursor for the next page
   * (null: no more). Each page costs a few bounded HSCAN steps over the shards' paused-groups hashes.
   */
  async pausedGroups(page: PageOptions = {}): Promise<Page<PausedGroup>> {
    assertCallOptions('pausedGroups(page)', page, CALL_OPTIONS.page);
    const { cursor, limit = 100 } = page;
    return new ScanPages(this.options.shards).page(cursor, limit, (shard, scan, count) =>
      this.listings.scanPausedGroups(shard, scan, count),
    );
  }

  /** Whether the queue is paused (any of its shards, should a pause() have failed half-way). */
  isPaused(): Promise<boolean> {
    return this.pauseFlag.read();
  }
}
