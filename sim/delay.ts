import {
  type CallKey,
  type ClaimedTask,
  type Command,
  DelayQueueStore,
  LateTry,
  QueueKeys,
  type ResolvedDelayQueueOptions,
  scriptsFor,
  shardOf,
} from './engine';
import { violated } from './invariants';
import { LostReply, type Proc, type World } from './world';

export interface DelaySetup {
  name: string;
  producers: number;
  consumers: number;
  ids: number;
}

const LEASE_MS = 1000;
const HANDLER_TIMEOUT_MS = 800;
const RETRY_DELAY_MS = 100;
const CALL_WINDOW_MS = 10_000;

/** A delivery of a task as the model follows it. */
interface Run {
  id: string;
  version: string;
  token: string;
  leaseUntil: number;
  settled: boolean;
}

/** What the model knows of one version of a task (one schedule call's payload). */
interface Version {
  /** The earliest time it may run, when the model knows it (a write whose reply it saw). */
  notBefore?: number;
  completed: number;
  counted: number;
}

/**
 * One DelayQueue with producers (schedule with each `onExists`, debounce, shift, cancel, each with the
 * application's retries on one call key), consumers and the model of its promises. The consumers make
 * the runtime's calls restated (consumer/, delay-consumer.adapter.ts): claim, a lease check before the
 * handler starts, heartbeats, acknowledge or fail, give back at shutdown counted past handlerTimeoutMs.
 */
export class DelayActors {
  readonly options: ResolvedDelayQueueOptions;
  private readonly keys: QueueKeys;
  private readonly running = new Map<string, Run>();
  private readonly versions = new Map<string, Version>();
  private nextVersion = 0;
  private calls = 0;
  private draining = false;
  /**
   * Since Redis last lost its data (which takes `stats()` along): what the model heard the scripts count
   * (`heard`), and how much more calls it never heard the reply of may have added (`unheard`).
   */
  private heard = newCounts();
  private unheard = newCounts();

  constructor(
    private readonly world: World,
    private readonly setup: DelaySetup,
  ) {
    this.options = {
      prefix: 'sim',
      shards: 2,
      leaseMs: LEASE_MS,
      maxAttempts: 3,
      deadLetter: { capacity: 100_000 },
    } as unknown as ResolvedDelayQueueOptions;
    this.keys = new QueueKeys('sim', setup.name, this.options.shards);
  }

  private store(proc: Proc): DelayQueueStore {
    return new DelayQueueStore(scriptsFor(this.world.issuer(proc)), this.keys, this.options);
  }

  start(): void {
    this.world.onUnheard((label, commands) => this.unheardCall(label, commands));
    const { producers, consumers, name } = this.setup;
    for (let i = 0; i < producers; i++) this.world.spawn(`${name}.producer${i}`, (proc) => this.produce(proc), true);
    for (let i = 0; i < consumers; i++) this.world.spawn(`${name}.consumer${i}`, (proc) => this.consume(proc));
  }

  /**
   * A call Redis ran whose reply nobody heard: an acknowledgement, failure or give-back ended its
   * delivery if it still held the lease (taken as ended, no attempt counted unsure); a write's time is
   * unknown to the model.
   */
  private unheardCall(label: string, commands: Command[]): void {
    const script = commands[commands.length - 1];
    if (!String(script[3] ?? '').includes(`{${this.setup.name}:`)) return;
    const counted = UNHEARD_COUNTS[label];
    if (counted) this.unheard[counted.field] += counted.most;
    if (label === 'delay-ack' || label === 'delay-fail' || label === 'delay-release')
      for (const run of this.running.values()) if (script.includes(run.token)) run.settled = true;
    if (label === 'delay-cancel')
      for (const run of this.running.values()) if (script.includes(run.id)) run.settled = true;
    if (label === 'delay-move') for (const version of this.versions.values()) version.notBefore = undefined;
    if (label === 'delay-schedule')
      for (const [, version] of script.join(' ').matchAll(/"version":"(v\d+)"/g)) {
        const known = this.versions.get(version);
        if (known) known.notBefore = undefined;
      }
  }

  drain(): void {
    this.draining = true;
  }

  dataLost(): void {
    this.running.clear();
    this.heard = newCounts();
    this.unheard = newCounts();
    // The loss took the call keys' records with the tasks: a retry after it writes its task afresh.
    for (const version of this.versions.values()) Object.assign(version, { completed: 0, counted: 0 });
  }

  // ---- producers

  private async produce(proc: Proc): Promise<void> {
    const store = this.store(proc);
    const rng = this.world.rng;
    while (proc.alive && !proc.stopping && !this.draining) {
      await this.world.sleep(proc, rng.int(0, 400));
      const id = `t${rng.int(0, this.setup.ids - 1)}`;
      const shard = shardOf(id, this.options.shards);
      const call: CallKey | undefined = rng.chance(0.7)
        ? {
            name: `${proc.name}.${this.calls++}`,
            windowMs: CALL_WINDOW_MS,
            deadline: this.world.now() + CALL_WINDOW_MS,
          }
        : undefined;
      const what = rng.next();
      const delayMs = rng.int(0, 1500);
      const version = `v${this.nextVersion++}`;
      const onExists = rng.pick(['replace', 'keep', 'earlier', 'later'] as const);
      const maxWaitMs = onExists === 'replace' && rng.chance(0.3) ? 1000 : undefined;
      if (what < 0.6) this.versions.set(version, { completed: 0, counted: 0 });
      // The application's retries: the same call key each time, so one try at most is applied.
      // After a try that was applied unheard, a later try answers what that one did (its call key's
      // record), as of then: writes to the id since may have moved it, so its time stays unknown.
      let appliedUnheard = false;
      for (let tries = call ? 3 : 1; tries > 0; tries--) {
        try {
          if (what < 0.6) {
            const { results } = await store.schedule(shard, [
              { id, json: JSON.stringify({ version }), time: ['in', delayMs], onExists, maxWaitMs, call },
            ]);
            const [result] = results;
            // After a try applied unheard, a write may be that try's, answered from its call key's record,
            // or this one's (Redis lost the record since): counted once, or not at all.
            if (result.changed) this[appliedUnheard ? 'unheard' : 'heard'].scheduledTotal++;
            if (result.changed && !appliedUnheard) this.versions.get(version)!.notBefore = result.runAt;
          } else if (what < 0.85) {
            const placed = await store.move(shard, id, 'in', delayMs, undefined, call);
            if (typeof placed === 'object') {
              if (appliedUnheard) this.unknownTime(shard, id);
              else this.moved(shard, id, placed.runAt);
            }
          } else if (await store.cancel(shard, id, call)) this.cancelled(id);
          break;
        } catch (error) {
          // A try that came after its call's deadline wrote nothing and ends the call (as WriteRetries does).
          if (error instanceof LateTry) break;
          if (!(error instanceof LostReply)) throw error;
          if (error.applied) {
            appliedUnheard = true;
            if (what >= 0.85) this.cancelled(id);
            else this.unknownTime(shard, id);
          }
          // The next try comes after a while: the queue's consumers may run what the first try wrote.
          await this.world.sleep(proc, this.world.rng.int(0, 1500));
        }
      }
    }
  }

  /** A cancel ends a running delivery: its lease is lost, its handler's signal aborted (delay-queue.md, handlers). */
  private cancelled(id: string): void {
    const run = this.running.get(id);
    if (run) run.settled = true;
  }

  /** A move places whatever version is stored now: it may run from the new time on. */
  private moved(shard: number, id: string, runAt: number): void {
    const version = this.storedVersion(shard, id);
    const known = version && this.versions.get(version);
    if (known) known.notBefore = Math.min(known.notBefore ?? runAt, runAt);
  }

  private unknownTime(shard: number, id: string): void {
    const version = this.storedVersion(shard, id);
    const known = version && this.versions.get(version);
    if (known) known.notBefore = undefined;
  }

  private storedVersion(shard: number, id: string): string | undefined {
    const json = this.world.read(['HGET', this.keys.key(shard, 'data'), id]) as string | null;
    return json === null ? undefined : versionOf(json);
  }

  // ---- consumers

  private async consume(proc: Proc): Promise<void> {
    const store = this.store(proc);
    const held: { run: Run; startedAt: number; shard: number }[] = [];
    while (proc.alive && !proc.stopping) {
      const shard = this.world.rng.int(0, this.options.shards - 1);
      let tasks: ClaimedTask[] = [];
      let serverNow = 0;
      try {
        ({ tasks, serverNow } = await store.claim(shard, CLAIM_LIMIT));
        this.heard.fired += tasks.length;
      } catch (error) {
        if (!(error instanceof LostReply)) throw error;
      }
      for (const task of tasks) {
        const run = this.claimed(task, serverNow);
        held.push({ run, startedAt: this.world.now(), shard });
        void this.world.guard(this.handle(proc, store, shard, run)).finally(() => {
          held.splice(
            held.findIndex((h) => h.run === run),
            1,
          );
        });
      }
      await this.world.sleep(proc, tasks.length > 0 ? 0 : this.world.rng.int(20, 200));
    }
    if (!proc.alive) return;
    for (const { run, startedAt, shard } of [...held]) {
      if (run.settled) continue;
      const counted = this.world.now() - startedAt > HANDLER_TIMEOUT_MS;
      try {
        if (await store.release(shard, run.id, run.token, counted, 'shut down')) {
          this.heard.givenBack++;
          this.ended(run, counted);
        }
      } catch (error) {
        if (!(error instanceof LostReply)) throw error;
      }
    }
  }

  private claimed(task: ClaimedTask, serverNow: number): Run {
    const { id, token, attempt } = task;
    const version = versionOf(task.json);
    const previous = this.running.get(id);
    if (previous && !previous.settled && previous.leaseUntil > serverNow)
      violated(
        'one-run-per-id',
        `${id}: ${version} (${token}) claimed while ${previous.version} (${previous.token}) holds the lease for ${previous.leaseUntil - serverNow} ms more`,
      );
    if (previous && !previous.settled && previous.version === version) this.count(version);
    const known = this.versions.get(version);
    if (!known) violated('applied-once', `${id}: ${version} delivered, never scheduled`);
    if (attempt > this.options.maxAttempts) violated('max-attempts', `${id}: attempt ${attempt}`);
    if (attempt < known.counted + 1)
      violated(
        'attempts-counted',
        `${id}: ${version} delivered as attempt ${attempt} after ${known.counted} counted attempts`,
      );
    if (known.notBefore !== undefined && serverNow < known.notBefore)
      violated('runs-at-or-after', `${id}: ${version} claimed at +${serverNow - known.notBefore} ms of its time`);
    const run: Run = { id, version, token, leaseUntil: serverNow + LEASE_MS, settled: false };
    this.running.set(id, run);
    this.world.log(`model: ${id} ${version} runs, attempt ${attempt}`);
    return run;
  }

  private count(version: string): void {
    const known = this.versions.get(version);
    if (known) known.counted++;
  }

  private async handle(proc: Proc, store: DelayQueueStore, shard: number, run: Run): Promise<void> {
    const rng = this.world.rng;
    if (this.world.now() >= run.leaseUntil) {
      this.world.log(`${proc.name}: ${run.id} not started, its lease ran out`);
      return;
    }
    const duration = rng.chance(0.1) ? rng.int(LEASE_MS, 3 * LEASE_MS) : rng.int(0, LEASE_MS / 2);
    const fails = !this.draining && rng.chance(0.25);
    const lease = { id: run.id, token: run.token };
    let left = duration;
    while (left > 0 && proc.alive) {
      const slice = Math.min(left, Math.ceil(LEASE_MS / 3));
      await this.world.sleep(proc, slice);
      left -= slice;
      if (left <= 0 || !proc.alive) break;
      try {
        const [held] = await store.extend(shard, [lease]);
        // A lost lease aborts the handler's signal: a handler that heeds it stops.
        if (!held) return;
        run.leaseUntil = this.world.now() + LEASE_MS;
      } catch (error) {
        if (!(error instanceof LostReply)) throw error;
      }
    }
    if (!proc.alive) return;
    if (proc.stopping && duration > HANDLER_TIMEOUT_MS) return; // left to the shutdown's give-back
    try {
      if (fails) {
        const reply = await store.fail(shard, run.id, run.token, RETRY_DELAY_MS, 'handler failed');
        if (reply) this.ended(run, true);
      } else {
        const [acked] = await store.ack(shard, [lease]);
        if (acked.completed) this.heard.completed++;
        if (acked.completed) this.completed(run);
        else this.ended(run, false);
      }
    } catch (error) {
      if (!(error instanceof LostReply)) throw error;
      // Applied, it ended the delivery if it still held the lease; no attempt is counted unsure.
      if (error.applied && this.running.get(run.id) === run) run.settled = true;
    }
  }

  private ended(run: Run, counted: boolean): void {
    if (this.running.get(run.id) === run) run.settled = true;
    if (counted) this.count(run.version);
  }

  private completed(run: Run): void {
    this.ended(run, false);
    const known = this.versions.get(run.version)!;
    if (++known.completed > 1) violated('applied-once', `${run.id}: ${run.version} completed ${known.completed} times`);
    known.counted = 0;
  }

  /**
   * At the end, once drained: `stats()` counts what the history did since Redis last lost its data, no
   * less than the calls the model heard and no more than the calls it did not hear could add.
   */
  async account(proc: Proc): Promise<string> {
    const stats = await this.store(proc).stats();
    for (const field of COUNTED) {
      const low = this.heard[field];
      const high = low + this.unheard[field];
      if (stats[field] < low || stats[field] > high)
        violated(
          'delay-stats-agree',
          `${this.setup.name}: stats().${field} ${stats[field]}, the history ${low === high ? low : `${low} to ${high}`}`,
        );
    }
    return `${this.setup.name}: stats ${JSON.stringify(stats)}`;
  }
}

/** The version a stored payload carries (a debounced one's starts with its window: see debounce-window). */
function versionOf(stored: string): string {
  return /"version":"(v\d+)"/.exec(stored)?.[1] ?? `unreadable ${stored}`;
}

/** The counters of `stats()` the model follows, each from its own scripts' replies. */
const COUNTED = ['scheduledTotal', 'fired', 'completed', 'givenBack'] as const;
type Counts = Record<(typeof COUNTED)[number], number>;

function newCounts(): Counts {
  return { scheduledTotal: 0, fired: 0, completed: 0, givenBack: 0 };
}

const CLAIM_LIMIT = 2;

/** What a call Redis ran unheard may have added to a counter, by script: at most a claim's limit of deliveries, one of the rest. */
const UNHEARD_COUNTS: Record<string, { field: keyof Counts; most: number } | undefined> = {
  'delay-schedule': { field: 'scheduledTotal', most: 1 },
  'delay-claim': { field: 'fired', most: CLAIM_LIMIT },
  'delay-ack': { field: 'completed', most: 1 },
  'delay-release': { field: 'givenBack', most: 1 },
};
