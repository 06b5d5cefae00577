import { DelayQueueStore, QueueKeys, type ResolvedDelayQueueOptions, scriptsFor, shardOf } from './engine';
import { violated } from './invariants';
import { LostReply, type Proc, type World } from './world';

interface Row {
  version: string;
  runAt: number;
}

const PASS_LEASE_MS = 30_000;
const MARKS_PER_CALL = 100;

/**
 * A DelayQueue whose application keeps its tasks in a database (the model's `rows`), written first,
 * then Redis, and a task source whose passes (with and without sweep) restore what Redis should hold:
 * the pass restated from task-reconciler.ts (begin on every shard, marks, the source read, its writes
 * with onExists 'keep' and the pass' id, unmarks, sweep, end), its calls the store's.
 */
export class TaskSourceActors {
  readonly options: ResolvedDelayQueueOptions;
  private readonly keys: QueueKeys;
  private readonly rows = new Map<string, Row>();
  /** When each row last changed in the database. */
  private readonly changedAt = new Map<string, number>();
  /** Writes under way (database written, Redis not yet answered) or given up: what Redis holds is unsure. */
  private readonly unsure = new Map<string, number>();
  private lostAt = -Infinity;
  private readonly writing = new Set<string>();
  private nextVersion = 0;
  private passes = 0;

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
  }

  private store(proc: Proc): DelayQueueStore {
    return new DelayQueueStore(scriptsFor(this.world.issuer(proc)), this.keys, this.options);
  }

  start(): void {
    for (let i = 0; i < this.producers; i++)
      this.world.spawn(`${this.name}.producer${i}`, (proc) => this.produce(proc), true);
    this.world.spawn(`${this.name}.source`, (proc) => this.passLoop(proc), true);
  }

  dataLost(): void {
    this.lostAt = this.world.now();
  }

  private change(id: string, row: Row | undefined): void {
    if (row) this.rows.set(id, row);
    else this.rows.delete(id);
    this.changedAt.set(id, this.world.now());
  }

  /** The application: the database first, then Redis (schedule with its time, or cancel), retried on one call key. */
  private async produce(proc: Proc): Promise<void> {
    const store = this.store(proc);
    const rng = this.world.rng;
    while (proc.alive && !proc.stopping && !this.world.draining) {
      await this.world.sleep(proc, rng.int(0, 400));
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
      for (let tries = 3; tries > 0 && !settled; tries--) {
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
      // A write that gave up leaves Redis unsure until a pass that began after it (it owes one).
      if (settled) this.unsure.set(id, this.unsure.get(id)! - 1);
      this.writing.delete(id);
    }
  }

  private async passLoop(proc: Proc): Promise<void> {
    const store = this.store(proc);
    while (proc.alive && !proc.stopping && !this.world.draining) {
      await this.world.sleep(proc, this.world.rng.int(300, 1500));
      try {
        await this.pass(store, this.world.rng.chance(0.7));
      } catch (error) {
        // A pass that failed (a lost reply, its record lost with Redis' data) is run again later.
        if (!(error instanceof LostReply) && !String(error).includes('outlived its lease')) throw error;
      }
    }
  }

  private async pass(store: DelayQueueStore, sweep: boolean): Promise<void> {
    const shards = Array.from({ length: this.options.shards }, (_, shard) => shard);
    const pass = `pass-${this.name}-${this.passes++}`;
    const began = this.world.now();
    const unsureBefore = new Set([...this.unsure].filter(([, n]) => n > 0).map(([id]) => id));
    for (const shard of shards) await store.pass(shard, { op: 'begin', pass, leaseMs: PASS_LEASE_MS });
    if (sweep)
      for (const shard of shards)
        for (let first = 0; ; first += MARKS_PER_CALL)
          if ((await store.sweepMark(shard, { mark: pass, first, count: MARKS_PER_CALL })) < MARKS_PER_CALL) break;
    // The source is read now: what the database holds at this step.
    const read = [...this.rows].map(([id, row]) => ({ id, ...row }));
    this.world.log(
      `model: ${pass} reads ${read.map((r) => `${r.id}=${r.version}`).join(',')}${sweep ? ' (sweep)' : ''}`,
    );
    for (const shard of shards) {
      const listed = read.filter((row) => shardOf(row.id, this.options.shards) === shard);
      if (sweep && listed.length > 0)
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
            onExists: 'keep' as const,
          })),
          pass,
        );
    }
    if (sweep)
      for (const shard of shards) {
        let cursor = '0';
        do ({ cursor } = await store.sweep(shard, { mark: pass, pass, cursor, count: MARKS_PER_CALL }));
        while (cursor !== '0');
      }
    for (const shard of shards) await store.pass(shard, { op: 'end', pass, leaseMs: PASS_LEASE_MS });
    this.check(began, unsureBefore);
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
}
