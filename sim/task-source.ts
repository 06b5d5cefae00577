import { DelayQueueStore, QueueKeys, type ResolvedDelayQueueOptions, scriptsFor, shardOf } from './engine';
import { violated } from './invariants';
import { delayRecord, type QueueRecord, type RecordCreated } from './library';
import { LostReply, type Proc, type World } from './world';

interface Row {
  version: string;
  runAt: number;
}

const PASS_LEASE_MS = 30_000;
const MARKS_PER_CALL = 100;
/** task-reconciler.ts' lease on an owed pass, its heartbeat (`alive`, a look for a pass owed) and liveness. */
const OWED_LEASE_MS = 10_000;
const HEARTBEAT_MS = 3000;
const SOURCE_ALIVE_MS = 10_000;
/**
 * How often a process checks its queue's record (DeclaredState: every 15 s, at once on a reconnection):
 * shorter here, a reconnection's check coming at any time.
 */
const RECORD_CHECK_MS: [number, number] = [500, 5000];
/** Tries to record a pass owed by a write that gave up (task-reconciler.ts retries while Redis does not answer). */
const OWE_TRIES = 5;
/** Between periodic passes (`reconcile.everyMs`, far shorter here than an application sets it). */
const PERIOD_MS: [number, number] = [300, 1500];
/** How long a pass spends between reading its source and its last write. */
const SOURCE_READ_MS: [number, number] = [0, 400];

/** One process with the source, as TaskReconciler keeps it: its owed passes one look at a time, its passes one after the other. */
interface SourceProc {
  proc: Proc;
  store: DelayQueueStore;
  record: QueueRecord;
  owedRunning: boolean;
  again: boolean;
  tail: Promise<void>;
  leases: number;
}

/**
 * A DelayQueue whose application keeps its tasks in a database (the model's `rows`), written first,
 * then Redis, by producer processes (API pods: no source), and one process with its task source, whose
 * passes (with and without sweep) restore what Redis should hold. Restated from task-reconciler.ts: the
 * pass (the record's state, begin on every shard, marks, the source read, its writes with onExists
 * 'keep', or 'replace' for the writes that gave up, and the pass' id, unmarks, sweep, end, `passed`),
 * and when one runs: owed (the queue's record created, by whichever process, or a write that gave up:
 * announced, and looked for by the heartbeat, under a lease) and, in three seeds of four, periodic (`reconcile.everyMs`). Every process checks the
 * queue's record (QueueRecord.restore, DeclaredState's round) and records it again when it is gone.
 * The calls are the library's: the store's and QueueRecord's.
 */
export class TaskSourceActors {
  readonly options: ResolvedDelayQueueOptions;
  private readonly keys: QueueKeys;
  private readonly rows = new Map<string, Row>();
  /** When each row last changed in the database. */
  private readonly changedAt = new Map<string, number>();
  /** Writes under way (database written, Redis not yet answered) or given up: what Redis holds is unsure. */
  private readonly unsure = new Map<string, number>();
  /**
   * Writes that gave up whose pass owed was recorded with their id, and the step it was: a pass that read
   * the record's state after that writes them as the database says, and they are no longer unsure after it.
   */
  private readonly owedAt = new Map<string, number>();
  private lostAt = -Infinity;
  private readonly writing = new Set<string>();
  private nextVersion = 0;
  private passes = 0;
  /**
   * The step at which a call the model heard created the queue's record, and by whom, until a pass that
   * read the record's state after it ended: a pass is owed meanwhile.
   */
  private created?: { step: number; by: string };
  /** The live process with the source, which hears a pass owed announced (pub/sub). */
  private listening?: SourceProc;
  /** Periodic passes (`reconcile.everyMs`), else only owed ones; what an owed pass' defaults sweep. */
  private readonly periodic: boolean;
  private readonly sweepDefault: boolean;
  /** Tries of a producer's write before it gives up (its `retryMs`): one in half the seeds, so many give up. */
  private readonly writeTries: number;

  constructor(
    private readonly world: World,
    private readonly name: string,
    private readonly producers: number,
  ) {
    this.options = {
      prefix: 'sim',
      shards: 2,
      leaseMs: 1000,
      maxAttempts: 3,
      deadLetter: { capacity: 100_000 },
    } as unknown as ResolvedDelayQueueOptions;
    this.keys = new QueueKeys('sim', name, this.options.shards);
    // Owed passes alone in a quarter of the seeds: what the end's audit sees of a pass owed and not run.
    this.periodic = Math.floor(world.seed / 2) % 4 !== 1;
    this.sweepDefault = Math.floor(world.seed / 4) % 2 === 0;
    this.writeTries = Math.floor(world.seed / 8) % 2 === 0 ? 1 : 3;
  }

  private parts(proc: Proc, created: RecordCreated): { store: DelayQueueStore; record: QueueRecord } {
    const scripts = scriptsFor(this.world.issuer(proc));
    return {
      store: new DelayQueueStore(scripts, this.keys, this.options),
      record: delayRecord(scripts, () => this.world.now(), this.keys, this.name, this.options.shards, created),
    };
  }

  start(): void {
    // A pass' end (`done`) that Redis ran unheard may have settled what was owed: the model no longer knows.
    this.world.onUnheard((label, commands) => {
      const script = commands[commands.length - 1];
      if (label === 'queue-pass' && script.includes(this.keys.meta) && script.includes('done'))
        this.created = undefined;
    });
    for (let i = 0; i < this.producers; i++)
      this.world.spawn(`${this.name}.producer${i}`, (proc) => this.produce(proc), true);
    // Runs through the drain too: a pass owed then is what the end's audit waits for.
    this.world.spawn(`${this.name}.source`, (proc) => this.sourceLoop(proc));
  }

  dataLost(): void {
    this.lostAt = this.world.now();
    // What was owed went with the data; the record's creation again owes a pass.
    this.created = undefined;
  }

  private change(id: string, row: Row | undefined): void {
    if (row) this.rows.set(id, row);
    else this.rows.delete(id);
    this.changedAt.set(id, this.world.now());
  }

  /** The application: the database first, then Redis (schedule with its time, or cancel), retried on one call key. */
  private async produce(proc: Proc): Promise<void> {
    // No source here: a creation of the record by this process is announced, and run elsewhere.
    const { store, record } = this.parts(proc, { recordCreated: () => this.announce() });
    const rng = this.world.rng;
    await this.checkRecord(proc, record);
    let checkAt = this.world.now() + rng.int(...RECORD_CHECK_MS);
    while (proc.alive && !proc.stopping && !this.world.draining) {
      await this.world.sleep(proc, rng.int(0, 400));
      if (this.world.now() >= checkAt) {
        await this.checkRecord(proc, record);
        checkAt = this.world.now() + rng.int(...RECORD_CHECK_MS);
      }
      const id = `r${rng.int(0, 3)}`;
      // One write of a row at a time, as the application's row lock would have it: two writers racing
      // on one row could leave Redis behind the database by themselves, with no pass involved.
      if (this.writing.has(id)) continue;
      this.writing.add(id);
      const shard = shardOf(id, this.options.shards);
      const cancel = this.rows.has(id) && rng.chance(0.4);
      const row = cancel
        ? undefined
        : { version: `s${this.nextVersion++}`, runAt: this.world.now() + rng.int(200, 3000) };
      const call = { name: `${proc.name}.${this.nextVersion}.${rng.int(0, 1e9)}`, windowMs: 10_000 };
      this.unsure.set(id, (this.unsure.get(id) ?? 0) + 1);
      this.change(id, row);
      let settled = false;
      for (let tries = this.writeTries; tries > 0 && !settled; tries--) {
        try {
          if (row)
            await store.schedule(shard, [
              {
                id,
                json: JSON.stringify({ version: row.version }),
                time: ['at', row.runAt],
                onExists: 'replace',
                call,
              },
            ]);
          else await store.cancel(shard, id, call);
          settled = true;
        } catch (error) {
          if (!(error instanceof LostReply)) throw error;
          await this.world.sleep(proc, rng.int(0, 500));
        }
      }
      // A write that gave up leaves Redis unsure until a pass that read the pass owed with its id ended
      // (a process that dies before it records that takes it with it).
      this.writing.delete(id);
      if (settled) this.unsure.set(id, this.unsure.get(id)! - 1);
      else if (await this.owe(proc, record, id)) this.owedAt.set(id, this.world.steps);
    }
  }

  /** QueueRecord.restore, as DeclaredState's round calls it (its start-up assert too: a first call records it). */
  private async checkRecord(proc: Proc, record: QueueRecord): Promise<void> {
    try {
      const found = await record.restore();
      if (found === 'present') return;
      this.world.log(`model: ${this.name} record ${found} by ${proc.name}`);
      this.created = { step: this.world.steps, by: proc.name };
    } catch (error) {
      if (!(error instanceof LostReply)) throw error;
    }
  }

  /** TaskReconciler.oweAfterGiveUp: recorded once Redis answers (a process gone first takes it along), then announced. */
  /** TaskReconciler.oweAfterGiveUp: whether the pass owed was recorded with `id` (a reply heard). */
  private async owe(proc: Proc, record: QueueRecord, id: string): Promise<boolean> {
    for (let tries = OWE_TRIES; tries > 0 && proc.alive; tries--) {
      try {
        const recorded = await record.owe('write-failed', [id]);
        this.announce();
        return recorded;
      } catch (error) {
        if (!(error instanceof LostReply)) throw error;
        await this.world.sleep(proc, 1000);
      }
    }
    return false;
  }

  private announce(): void {
    const source = this.listening;
    if (source?.proc.alive) void this.world.guard(this.runOwed(source));
  }

  /** The process with the source: its heartbeat, its record's check, owed passes and (some seeds) periodic ones. */
  private async sourceLoop(proc: Proc): Promise<void> {
    const rng = this.world.rng;
    const source = { proc, owedRunning: false, again: false, tail: Promise.resolve(), leases: 0 } as SourceProc;
    Object.assign(source, this.parts(proc, { recordCreated: () => this.recordCreated(source) }));
    this.listening = source;
    await this.checkRecord(proc, source.record);
    let beatAt = this.world.now();
    let checkAt = this.world.now() + rng.int(...RECORD_CHECK_MS);
    let periodicAt = this.periodic ? this.world.now() + rng.int(...PERIOD_MS) : Infinity;
    while (proc.alive && !proc.stopping) {
      await this.world.sleep(proc, Math.min(beatAt, checkAt, periodicAt) - this.world.now());
      if (this.world.now() >= beatAt) {
        beatAt = this.world.now() + HEARTBEAT_MS;
        try {
          const owed = await source.record.alive(SOURCE_ALIVE_MS);
          if (owed !== undefined) void this.world.guard(this.runOwed(source));
          else if (this.created)
            violated(
              'pass-owed',
              `${this.name}: its record was created by ${this.created.by} at step ${this.created.step}, no pass has read it since, yet ${proc.name}'s heartbeat finds no pass owed`,
            );
        } catch (error) {
          if (!(error instanceof LostReply)) throw error;
        }
      }
      if (this.world.now() >= checkAt) {
        await this.checkRecord(proc, source.record);
        checkAt = this.world.now() + rng.int(...RECORD_CHECK_MS);
      }
      if (this.world.now() >= periodicAt) {
        await this.run(source, rng.chance(0.7), 'schedule', '').catch(passFailed);
        periodicAt = this.world.now() + rng.int(...PERIOD_MS);
      }
    }
  }

  /** TaskReconciler.recordCreated: announced (heard here too), and looked for here at once. */
  private recordCreated(source: SourceProc): void {
    this.announce();
    void this.world.guard(this.runOwed(source));
  }

  /** A pass after any of this process still running (TaskReconciler.run). */
  private run(source: SourceProc, sweep: boolean, trigger: string, lease: string): Promise<void> {
    const pass = source.tail.then(() => this.pass(source, sweep, trigger, lease));
    source.tail = pass.catch(() => undefined);
    return pass;
  }

  /** TaskReconciler.runOwed: one look at a time, again when news came meanwhile. */
  private async runOwed(source: SourceProc): Promise<void> {
    if (source.owedRunning) {
      source.again = true;
      return;
    }
    source.owedRunning = true;
    try {
      do {
        source.again = false;
        await this.takeOwed(source);
      } while (source.again && source.proc.alive);
    } finally {
      source.owedRunning = false;
    }
  }

  /** Takes the lease on the pass owed, if one is and nobody live holds it, and runs the pass, renewing the lease. */
  private async takeOwed(source: SourceProc): Promise<void> {
    const token = `${source.proc.name}.${source.leases++}`;
    const owed = await source.record.take(token, OWED_LEASE_MS).catch(passFailed);
    if (owed === undefined) return;
    let running = true;
    const renewals = (async () => {
      while (running && source.proc.alive) {
        await this.world.sleep(source.proc, OWED_LEASE_MS / 3);
        if (running) await source.record.renew(token, OWED_LEASE_MS).catch(passFailed);
      }
    })();
    void this.world.guard(renewals);
    try {
      await this.run(source, this.sweepDefault, owed.why, token).catch(passFailed);
    } finally {
      running = false;
    }
  }

  private async pass(source: SourceProc, sweep: boolean, trigger: string, lease: string): Promise<void> {
    const { store, record } = source;
    const shards = Array.from({ length: this.options.shards }, (_, shard) => shard);
    const pass = `pass-${this.name}-${this.passes++}`;
    const start = await record.state();
    const readStep = this.world.steps;
    const began = this.world.now();
    const unsureBefore = new Set([...this.unsure].filter(([, n]) => n > 0).map(([id]) => id));
    const givenUp = new Set(start.owed?.ids);
    const sweeps = sweep || givenUp.size > 0;
    for (const shard of shards) await store.pass(shard, { op: 'begin', pass, leaseMs: PASS_LEASE_MS });
    if (sweep)
      for (const shard of shards)
        for (let first = 0; ; first += MARKS_PER_CALL)
          if ((await store.sweepMark(shard, { mark: pass, first, count: MARKS_PER_CALL })) < MARKS_PER_CALL) break;
    if (!sweep)
      for (const shard of shards) {
        const ids = [...givenUp].filter((id) => shardOf(id, this.options.shards) === shard);
        if (ids.length > 0) await store.mark(shard, ids, pass);
      }
    // The source is read now: what the database holds at this step.
    const read = [...this.rows].map(([id, row]) => ({ id, ...row }));
    this.world.log(
      `model: ${pass} (${trigger}) reads ${read.map((r) => `${r.id}=${r.version}`).join(',')}${sweep ? ' (sweep)' : ''}`,
    );
    // A source is a cursor: its rows come, and are written, over a while, the application writing meanwhile.
    await this.world.sleep(source.proc, this.world.rng.int(...SOURCE_READ_MS));
    for (const shard of shards) {
      const listed = read.filter((row) => shardOf(row.id, this.options.shards) === shard);
      if (sweeps && listed.length > 0)
        await store.unmark(
          shard,
          listed.map((row) => row.id),
        );
      if (listed.length > 0)
        await store.schedule(
          shard,
          listed.map(({ id, version, runAt }) => ({
            id,
            json: JSON.stringify({ version }),
            time: ['at', runAt] as ['at', number],
            onExists: givenUp.has(id) ? ('replace' as const) : ('keep' as const),
          })),
          pass,
        );
    }
    if (sweeps)
      for (const shard of shards) {
        let cursor = '0';
        do ({ cursor } = await store.sweep(shard, { mark: pass, pass, cursor, count: MARKS_PER_CALL }));
        while (cursor !== '0');
      }
    for (const shard of shards) await store.pass(shard, { op: 'end', pass, leaseMs: PASS_LEASE_MS });
    const counts = { listed: read.length, restored: 0, kept: 0, swept: 0, invalid: 0 };
    const at = this.world.now();
    await record.passed({ ...counts, durationMs: at - began, trigger: trigger as 'schedule', at }, start, lease);
    if (this.created && readStep > this.created.step) this.created = undefined;
    for (const [id, step] of this.owedAt) {
      if (step >= readStep) continue;
      this.owedAt.delete(id);
      this.unsure.set(id, this.unsure.get(id)! - 1);
    }
    this.check(began, unsureBefore);
    this.restored(began, unsureBefore);
  }

  /**
   * After a pass: no write made after it began was undone by it. A row deleted since (its cancel
   * applied) has no task; a row written since (its schedule applied) has its task.
   */
  private check(began: number, unsureBefore: Set<string>): void {
    if (this.lostAt >= began) return;
    for (const [id, at] of this.changedAt) {
      if (at < began || (this.unsure.get(id) ?? 0) > 0 || unsureBefore.has(id)) continue;
      const shard = shardOf(id, this.options.shards);
      const stored = this.world.read(['HGET', this.keys.key(shard, 'data'), id]) as string | null;
      const row = this.rows.get(id);
      if (!row && stored !== null)
        violated('pass-no-undo', `${this.name} ${id}: deleted and cancelled during a pass, yet Redis holds ${stored}`);
      if (row && stored === null)
        violated(
          'pass-no-undo',
          `${this.name} ${id}: written as ${row.version} during a pass, yet Redis holds no task`,
        );
    }
  }

  /**
   * After a pass: every live row of the database that no write changed since the pass began (nor was
   * unsure then or now) has its timer at the database's time, unless Redis lost its data since.
   */
  private restored(began: number, unsureBefore: Set<string>): void {
    if (this.lostAt >= began) return;
    for (const [id, row] of this.rows) {
      if (this.changedAt.get(id)! >= began || (this.unsure.get(id) ?? 0) > 0 || unsureBefore.has(id)) continue;
      const problem = this.timerProblem(id, row);
      if (problem)
        violated(
          'pass-restores',
          `${this.name} ${id}: ${row.version} at +${row.runAt - this.world.startMs} in the database, ${problem} after a pass`,
        );
    }
  }

  /**
   * The end, after the drain (no faults; the process with the source still running): a pass owed by a
   * loss or a creation of the record has run, whoever created it, so every live row whose writes were
   * all answered has its timer at the database's time.
   */
  audit(): void {
    for (const [id, row] of this.rows) {
      if ((this.unsure.get(id) ?? 0) > 0) continue;
      const problem = this.timerProblem(id, row);
      if (problem)
        violated(
          'owed-pass-runs',
          `${this.name} ${id}: ${row.version} at +${row.runAt - this.world.startMs} in the database, ${problem} at the end (last loss at +${this.lostAt - this.world.startMs}${this.periodic ? '' : ', no periodic pass'})`,
        );
    }
  }

  /** What is wrong with the row's timer in Redis, if anything. */
  private timerProblem(id: string, row: Row): string | undefined {
    const shard = shardOf(id, this.options.shards);
    const stored = this.world.read(['HGET', this.keys.key(shard, 'data'), id]) as string | null;
    if (stored === null) return 'Redis holds no task';
    if (!stored.includes(`"version":"${row.version}"`)) return `Redis holds ${stored}`;
    const score = this.world.read(['ZSCORE', this.keys.key(shard, 'due'), id]) as string | null;
    if (score === null || Number(score) !== row.runAt)
      return `its timer is at ${score === null ? 'none' : `+${Number(score) - this.world.startMs}`}`;
    return undefined;
  }
}

/** A pass (or a look for one) that failed: a lost reply, its record lost with Redis' data; it is run again later. */
function passFailed(error: unknown): undefined {
  if (!(error instanceof LostReply) && !String(error).includes('outlived its lease')) throw error;
  return undefined;
}
