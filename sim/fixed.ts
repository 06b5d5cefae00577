import {
  type CallKey,
  type ClaimedBatch,
  type FailReply,
  entryMessage,
  FixedQueueStore,
  QueueKeys,
  type ResolvedFixedQueueOptions,
  type Command,
  scriptsFor,
  shardOf,
} from './engine';
import { violated } from './invariants';
import { LostReply, type Proc, type World } from './world';

export type FixedMode = 'at-least-once' | 'at-most-once';

export interface FixedSetup {
  name: string;
  mode: FixedMode;
  /** false: unordered (at-most-once), a group's batches may run in parallel. */
  ordered: boolean;
  onExhausted: 'dead-letter' | 'pause-group';
  groupRateLimit?: { max: number; durationMs: number };
  producers: number;
  consumers: number;
  groups: number;
}

const LEASE_MS = 1000;
const HANDLER_TIMEOUT_MS = 800;
const RETRY_DELAY_MS = 100;
const CALL_WINDOW_MS = 10_000;

/** What the model knows of one message: pushed by whom, stored when (if it knows), acknowledged. */
interface Message {
  group: string;
  /** Its place in the order Redis stored its group's messages in, once the model knows it. */
  order?: number;
  storedAt?: number;
  /** Stored before the last data loss: whatever became of it, the loss took it. */
  era: number;
  delivered: number;
  acked: boolean;
  /** Taken by a claim whose reply nobody heard. */
  takenUnheard?: boolean;
  /** Deliveries that ended counting as an attempt since it was last made fresh (acknowledged, resumed, requeued). */
  counted: number;
  /** Its acknowledgement, whole or part of its batch's, was confirmed by Redis: never delivered again. */
  ackConfirmed?: 'ack' | 'partial';
}

interface Delivery {
  group: string;
  token: string;
  leaseUntil: number;
  ids: string[];
  settled: boolean;
  attempt: number;
}

/** A consumer's way of running a batch it was handed (by a claim, or by an acknowledgement's handover). */
type Run = (batch: ClaimedBatch, serverNow: number) => void;

/**
 * One FixedQueue (ordered or not, rate-limited per group or not) with its producers, consumers, an
 * idle-group sweeper and an operator, and the model of what it promised. The consumers make the
 * runtime's calls (consumer/, batch-consumer.adapter, group-expiry.ts) restated step by step: claim,
 * check the lease before the handler starts, heartbeat while it runs, acknowledge (handing the slot the
 * group's next batch) or fail (part of the batch handled, or none), give back at shutdown counted past
 * handlerTimeoutMs. Unordered, a batch holds nothing: it is handled, and that is all.
 */
export class FixedActors {
  readonly options: ResolvedFixedQueueOptions;
  private readonly keys: QueueKeys;
  /** The keys the checks after each step read, named once. */
  private readonly pausedKeys: string[];
  private readonly groupKeys: [group: string, key: string][];
  private readonly messages = new Map<string, Message>();
  private readonly running = new Map<string, Delivery>();
  /** Highest seq of each group first delivered, for push order. */
  private readonly firstDelivered = new Map<string, number>();
  private readonly paused = new Set<string>();
  /** Start times (Redis' clock) of each group's batches the model heard of, for groupRateLimit. */
  private readonly starts = new Map<string, number[]>();
  /** Of a group whose batch failed (wholly or in part): the messages that must come back first, in order. */
  private readonly rest = new Map<string, string[]>();
  /** The messages of each dead batch the operator asked to requeue, by its id. */
  private readonly requeueing = new Map<string, string[]>();
  private era = 0;
  private nextSeq = 0;
  private nextOrder = 0;
  private calls = 0;
  private draining = false;

  constructor(
    private readonly world: World,
    private readonly setup: FixedSetup,
  ) {
    this.options = {
      prefix: 'sim',
      shards: 2,
      ordered: setup.ordered,
      delivery: setup.mode,
      onExhausted: setup.onExhausted,
      groupRateLimit: setup.groupRateLimit,
      batchSize: 3,
      capacity: 12,
      maxWaitMs: 0,
      maxAgeMs: 20_000,
      ttlMs: 4_000,
      leaseMs: LEASE_MS,
      // Two: a batch reaches its last attempt (and its lapse, dead letter or pause) often.
      maxAttempts: 2,
      deadLetter: { capacity: 100_000 },
    } as unknown as ResolvedFixedQueueOptions;
    this.keys = new QueueKeys('sim', setup.name, this.options.shards);
    const shards = Array.from({ length: this.options.shards }, (_, shard) => shard);
    this.pausedKeys = shards.map((shard) => this.keys.key(shard, 'pausedGroups'));
    this.groupKeys = Array.from({ length: setup.groups }, (_, g) => {
      const group = `g${g}`;
      return [group, this.keys.member(shardOf(group, this.options.shards), 'g', group)];
    });
  }

  private store(proc: Proc): FixedQueueStore {
    return new FixedQueueStore(scriptsFor(this.world.issuer(proc)), this.keys, this.options);
  }

  private get label(): string {
    return this.setup.name;
  }

  start(): void {
    const { producers, consumers } = this.setup;
    for (let i = 0; i < producers; i++)
      this.world.spawn(`${this.label}.producer${i}`, (proc) => this.produce(proc), true);
    for (let i = 0; i < consumers; i++) this.world.spawn(`${this.label}.consumer${i}`, (proc) => this.consume(proc));
    this.world.spawn(`${this.label}.sweeper`, (proc) => this.sweep(proc));
    this.world.spawn(`${this.label}.operator`, (proc) => this.operate(proc));
    this.world.check(() => this.checkStored());
    this.world.onUnheard((label, commands, replies) => this.unheard(label, commands, replies));
  }

  /** Stops producing and failing: what is left is delivered, for the end's accounting. */
  drain(): void {
    this.draining = true;
  }

  dataLost(): void {
    this.era++;
    this.running.clear();
    this.paused.clear();
    this.firstDelivered.clear();
    this.starts.clear();
    this.rest.clear();
    this.requeueing.clear();
  }

  private group(): string {
    return `g${this.world.rng.int(0, this.setup.groups - 1)}`;
  }

  // ---- producers

  private async produce(proc: Proc): Promise<void> {
    const store = this.store(proc);
    while (proc.alive && !proc.stopping && !this.draining) {
      await this.world.sleep(proc, this.world.rng.int(0, 300));
      const group = this.group();
      const ids = Array.from({ length: this.world.rng.int(1, 3) }, () => `${group}.${this.nextSeq++}`);
      for (const id of ids) this.messages.set(id, { group, era: this.era, delivered: 0, acked: false, counted: 0 });
      // The previous release sends no call keys: its retries are not protected (docs/upgrading.md).
      const call: CallKey | undefined =
        this.world.rng.chance(0.7) && !proc.previous
          ? {
              name: `${proc.name}.${this.calls++}`,
              windowMs: CALL_WINDOW_MS,
              deadline: this.world.now() + CALL_WINDOW_MS,
            }
          : undefined;
      const shard = shardOf(group, this.options.shards);
      // The application's retries (retryMs): the same call key each time, so one try at most is applied.
      for (let tries = call ? 3 : 1; tries > 0; tries--) {
        try {
          const { late } = await store.push(shard, [{ group, messages: ids.map((id) => JSON.stringify(id)), call }]);
          // A try that came after its call's deadline wrote nothing and ends the call (as WriteRetries does).
          if (late === undefined) this.stored(ids);
          break;
        } catch (error) {
          if (!(error instanceof LostReply)) throw error;
          if (error.applied) this.stored(ids);
          // The next try comes after a while: the queue's consumers may run what the first try wrote.
          await this.world.sleep(proc, this.world.rng.int(0, 1500));
        }
      }
    }
  }

  private stored(ids: string[]): void {
    for (const id of ids) {
      const message = this.messages.get(id)!;
      // A try after a loss of Redis' data is applied again (the loss took its call key's record too).
      if (message.storedAt !== undefined && message.era === this.era) continue;
      if (message.era !== this.era)
        Object.assign(message, {
          delivered: 0,
          acked: false,
          counted: 0,
          takenUnheard: false,
          ackConfirmed: undefined,
        });
      message.storedAt = this.world.now();
      message.order = this.nextOrder++;
      message.era = this.era;
    }
  }

  // ---- consumers

  private async consume(proc: Proc): Promise<void> {
    const store = this.store(proc);
    const held: { delivery: Delivery; startedAt: number; shard: number }[] = [];
    const candidates: string[][] = [[], []];
    const run =
      (shard: number): Run =>
      (batch, serverNow) => {
        // Every message of the group's head expired (counted): nothing to deliver, nothing held.
        if (batch.messages.length === 0) return;
        const delivery = this.claimed(batch, serverNow);
        held.push({ delivery, startedAt: this.world.now(), shard });
        void this.world.guard(this.handle(proc, store, shard, delivery, run(shard))).finally(() => {
          held.splice(
            held.findIndex((h) => h.delivery === delivery),
            1,
          );
        });
      };
    while (proc.alive && !proc.stopping) {
      const shard = this.world.rng.int(0, this.options.shards - 1);
      let batches: ClaimedBatch[] = [];
      let serverNow = 0;
      try {
        const reply = await store.take(shard, 2, candidates[shard]);
        candidates[shard] = reply.due;
        batches = reply.batches;
        serverNow = reply.serverNow;
        for (const group of reply.paused ?? []) this.announcePause(group, 'a claim found its last attempt lapsed');
      } catch (error) {
        if (!(error instanceof LostReply)) throw error;
        // A claim whose reply was lost: at-least-once, its batches come back after their leases.
      }
      for (const batch of batches) run(shard)(batch, serverNow);
      await this.world.sleep(proc, batches.length > 0 ? 0 : this.world.rng.int(20, 200));
    }
    if (!proc.alive) return;
    // Shutdown: unfinished deliveries are given back, counted as attempts past handlerTimeoutMs.
    for (const { delivery, startedAt, shard } of [...held]) {
      if (delivery.settled || !this.setup.ordered) continue;
      const counted = this.world.now() - startedAt > HANDLER_TIMEOUT_MS;
      try {
        const [kept] = await store.release(
          shard,
          [{ group: delivery.group, token: delivery.token, counted }],
          'shut down',
        );
        if (kept) this.gaveBack(delivery, counted);
      } catch (error) {
        if (!(error instanceof LostReply)) throw error;
      }
    }
  }

  /** The model's side of a claim: checks every promise a delivery must keep. */
  private claimed(batch: ClaimedBatch, serverNow: number): Delivery {
    const { group, token = '', attempt } = batch;
    const ids = batch.messages as string[];
    const ordered = this.setup.ordered;
    const previous = ordered ? this.running.get(group) : undefined;
    if (previous && !previous.settled && previous.leaseUntil > serverNow)
      violated(
        'one-batch-per-group',
        `${group}: ${token} claimed while ${previous.token} holds the lease until +${previous.leaseUntil - serverNow} ms`,
      );
    if (this.paused.has(group)) violated('nothing-claimed-while-paused', `${group} claimed while paused`);
    if (attempt > this.options.maxAttempts)
      violated('max-attempts', `${group}: attempt ${attempt} of at most ${this.options.maxAttempts}`);
    if (previous && !previous.settled)
      // Its lease ran out: that delivery counted as an attempt.
      for (const id of previous.ids) this.count(id);
    this.started(group, serverNow);
    const delivery: Delivery = { group, token, leaseUntil: serverNow + LEASE_MS, ids, settled: false, attempt };
    if (ordered) this.running.set(group, delivery);
    let last = -1;
    for (const id of ids) {
      const message = this.messages.get(id);
      if (!message) {
        violated('delivered-only-pushed', `${group}: ${id} delivered but never pushed`);
        continue;
      }
      if (this.setup.mode === 'at-most-once' && message.delivered > 0)
        violated('at-most-once', `${id} delivered ${message.delivered + 1} times`);
      if (message.ackConfirmed)
        violated(
          message.ackConfirmed === 'ack' ? 'acked-kept' : 'partial-acked-kept',
          `${this.label} ${group}: ${id} delivered again after its acknowledgement`,
        );
      if (this.setup.mode === 'at-least-once' && attempt < message.counted + 1)
        violated('attempts-counted', `${id} delivered as attempt ${attempt} after ${message.counted} counted attempts`);
      if (ordered && message.delivered === 0 && message.order !== undefined) {
        if (message.order <= last || message.order <= (this.firstDelivered.get(group) ?? -1))
          violated(
            'push-order',
            `${this.label} ${group}: ${id} first delivered after a message pushed after it; the group's list now: ${this.listOf(group)}`,
          );
        last = message.order;
        this.firstDelivered.set(group, Math.max(message.order, this.firstDelivered.get(group) ?? -1));
      }
      if (message.delivered === 0) {
        if (message.storedAt !== undefined && serverNow - message.storedAt > (this.options.maxAgeMs ?? Infinity))
          violated(
            'max-age',
            `${id} delivered ${serverNow - message.storedAt} ms after its push (maxAgeMs ${this.options.maxAgeMs})`,
          );
      }
      message.delivered++;
    }
    this.restFirst(group, ids);
    this.world.log(`model: ${this.label} ${group} delivered [${ids.join(',')}] attempt ${attempt}`);
    return delivery;
  }

  /** A batch of `group` starts at `at` (Redis' clock): at most `max` in any `durationMs`. */
  private started(group: string, at: number): void {
    const limit = this.setup.groupRateLimit;
    if (!limit) return;
    const recent = (this.starts.get(group) ?? []).filter((start) => start > at - limit.durationMs);
    if (recent.length >= limit.max)
      violated(
        'group-rate-limit',
        `${this.label} ${group}: a batch starts at +${at - this.world.startMs} after ${recent.length} within ${limit.durationMs} ms (at +${recent.map((start) => start - this.world.startMs).join(', +')}), max ${limit.max}`,
      );
    recent.push(at);
    this.starts.set(group, recent);
  }

  /**
   * After a failure the model heard of, the group's next batch it hears of is that failure's rest, from
   * its first message still held (capacity, maxAgeMs or ttlMs may have taken some, oldest first, or all).
   */
  private restFirst(group: string, ids: string[]): void {
    const rest = this.rest.get(group);
    if (!rest) return;
    this.rest.delete(group);
    const from = rest.indexOf(ids[0]);
    const kept = from < 0 ? [] : rest.slice(from, from + ids.length);
    if (from >= 0 ? kept.join() === ids.join() : !rest.some((id) => this.inList(group, id))) return;
    violated(
      'partial-rest-first',
      `${this.label} ${group}: [${ids.join(',')}] delivered after a failure whose rest is [${rest.join(',')}]; the group's list now: ${this.listOf(group)}`,
    );
  }

  private inList(group: string, id: string): boolean {
    return this.listOf(group).split(',').includes(id);
  }

  /**
   * A call Redis ran whose reply nobody heard (lost, or its process crashed): at most once, the messages
   * a claim took are gone with it, as documented.
   */
  private unheard(label: string, commands: Command[], replies: unknown[]): void {
    const script = commands[commands.length - 1];
    if (!String(script[3] ?? '').includes(`{${this.label}:`)) return;
    // An acknowledgement, failure or give-back that reached Redis ended its delivery if it still held
    // the lease: taken as ended, no attempt counted unsure.
    if (label !== 'fixed-extend')
      for (const delivery of this.running.values())
        if (script.includes(delivery.token)) {
          delivery.settled = true;
          // An acknowledgement took its messages, a failure the first ones it names (ARGV[10]), if it
          // still held the group (if not, they come back, and are acknowledged again).
          if (label === 'fixed-ack') this.acknowledged(delivery.ids);
          if (label === 'fixed-fail')
            this.acknowledged(delivery.ids.slice(0, Number(script[3 + Number(script[2]) + 9])));
        }
    // A pause or resume nobody heard of (an exhaustion pause found by a lost claim is announced by
    // no one either): the model takes Redis' word for every group.
    for (let g = 0; g < this.setup.groups; g++) this.syncPaused(`g${g}`);
    if (label === 'fixed-requeue' && (replies[replies.length - 1] as number[] | undefined)?.[0] === 1)
      for (const id of this.requeueing.get(String(script[3 + Number(script[2])])) ?? []) this.requeued(id);
    for (const [id] of JSON.stringify(replies).matchAll(/g\d+\.\d+/g)) {
      const message = this.messages.get(id);
      if (message && message.delivered === 0) message.takenUnheard = true;
    }
  }

  private listOf(group: string): string {
    const shard = shardOf(group, this.options.shards);
    const entries = this.world.read(['LRANGE', this.keys.member(shard, 'g', group), 0, -1]) as string[];
    return entries.map((entry) => entryMessage<string>(entry)).join(',');
  }

  private count(id: string): void {
    const message = this.messages.get(id);
    if (message) message.counted++;
  }

  private async handle(proc: Proc, store: FixedQueueStore, shard: number, delivery: Delivery, run: Run): Promise<void> {
    const rng = this.world.rng;
    // Started only while the lease holds, by the process' estimate (at-least-once).
    if (this.setup.mode === 'at-least-once' && this.world.now() >= delivery.leaseUntil) {
      this.world.log(`${proc.name}: ${delivery.group} not started, its lease ran out`);
      return;
    }
    const duration = rng.chance(0.1) ? rng.int(LEASE_MS, 3 * LEASE_MS) : rng.int(0, LEASE_MS / 2);
    const fails = !this.draining && rng.chance(0.25);
    const lease = { group: delivery.group, token: delivery.token };
    let left = duration;
    while (left > 0 && proc.alive && !delivery.settled) {
      const slice = Math.min(left, Math.ceil(LEASE_MS / 3));
      await this.world.sleep(proc, slice);
      left -= slice;
      // Unordered, a batch holds nothing: nothing to extend, nothing to acknowledge.
      if (left <= 0 || !proc.alive || !this.setup.ordered) break;
      try {
        const [held] = await store.extend(shard, [lease]);
        // A lost lease aborts the handler's signal: a handler that heeds it stops.
        if (!held) return;
        delivery.leaseUntil = this.world.now() + LEASE_MS;
      } catch (error) {
        if (!(error instanceof LostReply)) throw error;
      }
    }
    if (!proc.alive || delivery.settled || !this.setup.ordered) return;
    if (proc.stopping && duration > HANDLER_TIMEOUT_MS) return; // left to the shutdown's give-back
    try {
      if (fails && this.setup.mode === 'at-least-once') {
        // Half the failures handled the first messages of their batch (PartialBatchError).
        const handled = rng.chance(0.5) ? rng.int(0, delivery.ids.length) : 0;
        const size = delivery.ids.length;
        const reply = await store.fail(shard, lease, RETRY_DELAY_MS, 'handler failed', { handled, size });
        this.failed(delivery, reply, handled);
      } else {
        // The runtime's handover: the acknowledgement claims the group's next batch for the same slot.
        const next = !proc.stopping && rng.chance(0.5);
        const reply = await store.ack(shard, [{ ...lease, next }]);
        this.acked(delivery, reply.dueAt[0] !== null);
        const handed = reply.next[0];
        if (handed) run(handed, reply.serverNow);
      }
    } catch (error) {
      if (!(error instanceof LostReply)) throw error;
      // Applied, it ended the delivery if it still held the lease: the model takes it as ended, and
      // counts no attempt it cannot be sure of.
      if (error.applied && fails && this.setup.mode === 'at-least-once') delivery.settled = true;
      else if (error.applied) this.acked(delivery);
    }
  }

  /** `confirmed`: Redis answered that the delivery still held its group (at-least-once: its messages are gone). */
  private acked(delivery: Delivery, confirmed = false): void {
    if (this.running.get(delivery.group) !== delivery) return;
    delivery.settled = true;
    this.acknowledged(delivery.ids, confirmed && this.setup.mode === 'at-least-once' ? 'ack' : undefined);
  }

  private acknowledged(ids: string[], confirmed?: 'ack' | 'partial'): void {
    for (const id of ids) {
      const message = this.messages.get(id);
      if (message) {
        message.acked = true;
        message.counted = 0;
        if (confirmed) message.ackConfirmed = confirmed;
      }
    }
  }

  /** A failure Redis answered: the first `handled` messages acknowledged (those capacity left), the rest failed. */
  private failed(delivery: Delivery, reply: FailReply, handled: number): void {
    if (reply.fate === 'stale') return;
    delivery.settled = true;
    this.acknowledged(delivery.ids.slice(handled - reply.acknowledged, handled), 'partial');
    const rest = delivery.ids.slice(handled);
    for (const id of rest) this.count(id);
    if (reply.fate === 'retry' || reply.fate === 'paused') this.rest.set(delivery.group, rest);
    if (reply.fate === 'paused') this.announcePause(delivery.group, `its last attempt (${delivery.attempt}) failed`);
  }

  private gaveBack(delivery: Delivery, counted: boolean): void {
    delivery.settled = true;
    if (counted) for (const id of delivery.ids) this.count(id);
  }

  /** A pause or a resume ends the group's delivery whose lease ran out: none of it is held any more. */
  private endDelivery(group: string): void {
    const delivery = this.running.get(group);
    if (delivery && this.world.now() >= delivery.leaseUntil) delivery.settled = true;
  }

  private announcePause(group: string, why: string): void {
    this.paused.add(group);
    this.endDelivery(group);
    this.world.log(`model: ${this.label} ${group} paused, announced: ${why}`);
  }

  // ---- ttlMs sweeper (group-expiry.ts: idle groups listed, then expired; the script checks again)

  private async sweep(proc: Proc): Promise<void> {
    const store = this.store(proc);
    while (proc.alive && !proc.stopping) {
      await this.world.sleep(proc, this.world.rng.int(200, 2000));
      const shard = this.world.rng.int(0, this.options.shards - 1);
      try {
        const { groups } = await store.idleGroups(shard, 100);
        if (groups.length === 0) continue;
        const { expired } = await store.expire(shard, groups);
        groups.forEach((group, i) => {
          if (expired[i] > 0 && this.paused.has(group))
            violated('paused-kept', `${group} paused, yet ${expired[i]} of its messages expired by ttlMs`);
        });
      } catch (error) {
        if (!(error instanceof LostReply)) throw error;
      }
    }
  }

  // ---- operator: pause and resume groups, requeue dead batches

  private async operate(proc: Proc): Promise<void> {
    const store = this.store(proc);
    while (proc.alive && !proc.stopping) {
      await this.world.sleep(proc, this.world.rng.int(500, 3000));
      const group = this.group();
      const shard = shardOf(group, this.options.shards);
      try {
        if (!this.draining && this.world.rng.chance(0.4)) {
          // Recorded before the call: a claim in the same script's wake would be no violation.
          const paused = await store.pauseGroup(shard, group);
          if (paused) this.announcePause(group, 'pauseGroup');
        } else if (this.paused.has(group) || this.world.rng.chance(0.3)) {
          await store.resumeGroup(shard, group);
          this.resumed(group);
        } else {
          const [dead] = await store.dead(shard, 1);
          if (dead) {
            const ids = dead.entries.map((entry) => entryMessage<string>(entry));
            // Known to `unheard` too: a requeue Redis ran unheard appended them all the same.
            this.requeueing.set(dead.id, ids);
            if (await store.requeue(shard, dead.id)) for (const id of ids) this.requeued(id);
          }
        }
      } catch (error) {
        if (!(error instanceof LostReply)) throw error;
        // Not knowing whether a pause was applied, the model asks Redis, as an operator would look.
        if (error.applied) this.syncPaused(group);
      }
    }
  }

  private resumed(group: string): void {
    this.paused.delete(group);
    this.endDelivery(group);
    // resumeGroup delivers an exhausted batch again from attempt 1.
    for (const message of this.messages.values()) if (message.group === group) message.counted = 0;
  }

  /** A dead message appended to its group again as if pushed now (fresh time, among the newest). */
  private requeued(id: string): void {
    const message = this.messages.get(id);
    if (!message) return;
    message.counted = 0;
    message.acked = false;
    message.storedAt = this.world.now();
    message.order = this.nextOrder++;
    // It was buried: a delivery of it the model still followed (a lapse it did not hear of) ended then,
    // and a failure's rest it was part of is no longer owed first (it is appended again).
    const delivery = this.running.get(message.group);
    if (delivery?.ids.includes(id)) delivery.settled = true;
    if (this.rest.get(message.group)?.includes(id)) this.rest.delete(message.group);
  }

  private syncPaused(group: string): void {
    const shard = shardOf(group, this.options.shards);
    const isPaused = this.world.read(['HEXISTS', this.keys.key(shard, 'pausedGroups'), group]) === 1;
    if (isPaused) this.announcePause(group, 'pauseGroup (reply lost)');
    else this.resumed(group);
  }

  // ---- after every step

  private checkStored(): void {
    // Capacity and pauses change only by a call naming the key (or by a loss of everything).
    const touched = this.world.touched();
    if (touched.size === 0) return;
    for (const pausedKey of this.pausedKeys) {
      if (!touched.has(pausedKey)) continue;
      const paused = this.world.read(['HKEYS', pausedKey]) as string[];
      for (const group of paused)
        if (!this.paused.has(group))
          violated('pause-announced', `${this.label} ${group} is paused and no pause was announced`);
    }
    for (const [group, key] of this.groupKeys) {
      if (!touched.has(key)) continue;
      const length = this.world.read(['LLEN', key]) as number;
      if (length > this.options.capacity)
        violated('capacity', `${this.label} ${group} holds ${length} messages, capacity ${this.options.capacity}`);
    }
  }

  /** At the end, once drained: every message stored since the last loss is acknowledged or counted. */
  async account(proc: Proc): Promise<string> {
    const store = this.store(proc);
    for (const group of [...this.paused]) {
      await store.resumeGroup(shardOf(group, this.options.shards), group);
      this.resumed(group);
    }
    const stats = await store.stats();
    let deadMessages = 0;
    for (let shard = 0; shard < this.options.shards; shard++)
      for (const dead of await store.dead(shard, 100_000)) deadMessages += dead.entries.length;
    const current = [...this.messages.values()].filter((m) => m.storedAt !== undefined && m.era === this.era);
    const missing = current.filter((m) => !m.acked && m.delivered === 0 && !m.takenUnheard).length;
    const unacked = current.filter((m) => !m.acked).length;
    const counted = stats.dropped + stats.expired + deadMessages + stats.pending;
    // Pushes the model never heard the outcome of (a crash, a retry that gave up) may or may not be stored.
    const unheard = [...this.messages.values()].filter((m) => m.storedAt === undefined).length;
    if (stats.pushed < current.length || stats.pushed > current.length + unheard)
      violated(
        'stats-agree',
        `${this.label}: stats().pushed ${stats.pushed}, the history stored ${current.length} (and ${unheard} unknown)`,
      );
    if (this.setup.mode === 'at-least-once' && unacked > counted)
      violated(
        'nothing-lost',
        `${this.label}: ${unacked} stored messages not acknowledged, ${counted} counted (dropped ${stats.dropped}, expired ${stats.expired}, dead ${deadMessages}, pending ${stats.pending})`,
      );
    if (this.setup.mode === 'at-most-once' && missing > counted)
      violated('nothing-lost', `${this.label}: ${missing} stored messages never delivered, ${counted} counted`);
    return `${this.label}: ${current.length} stored, ${current.length - unacked} acknowledged, stats ${JSON.stringify(stats)}`;
  }
}
