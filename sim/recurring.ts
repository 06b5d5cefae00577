import {
  type ClaimedTask,
  type Command,
  DelayQueueStore,
  QueueKeys,
  type ResolvedDelayQueueOptions,
  scriptsFor,
} from './engine';
import { violated } from './invariants';
import {
  DECLARE_CALLS,
  DECLARE_EVERY_MS,
  DECLARER_ALIVE_MS,
  FORGOTTEN_AFTER_MS,
  type OccurrencePlan,
  type RecurringDeclared,
  RecurringStore,
  RepeatOccurrences,
  RepeatSchedule,
  recurringQueueOptions,
  type ServerClock,
} from './library';
import { LostReply, type Proc, type World } from './world';

/** The library's own lease of a schedule's queue, so that the model's runs lapse when the library's do. */
const LEASE_MS = recurringQueueOptions('').leaseMs!;
const MAX_ATTEMPTS = 3;
const RETRY_DELAY_MS = 100;
const SHARD = 0;
/** Longest idle sleep between claims: a tick every second, a declaration of a new occurrence announced. */
const IDLE_POLL_MS = 1000;

/** A run of a tick as the model follows it. */
interface Run {
  occurrence: number;
  token: string;
  leaseUntil: number;
  settled: boolean;
}

/**
 * One `@Recurring` schedule and the processes that declare it, each restating what RecurringMounter and
 * RecurringDeclaration do (declare at start and every DECLARE_EVERY_MS, through RecurringStore, the
 * window computed again with what Redis replied; withdraw at shutdown) and what the consumer of its
 * queue does with an occurrence (delay-consumer.adapter.ts: claim, RepeatOccurrences' plan, heartbeats,
 * end through RepeatOccurrences, a failure retried until the last attempt, give-back at shutdown).
 */
export class RecurringActors {
  private readonly options: ResolvedDelayQueueOptions;
  private readonly keys: QueueKeys;
  private readonly schedule: RepeatSchedule;
  private readonly queue: string;
  /** The run of the schedule that may hold its lease, and the ticks whose run ended heard as completed. */
  private running?: Run;
  private readonly completed = new Set<number>();
  private runs = 0;

  constructor(
    private readonly world: World,
    private readonly name: string,
    private readonly declarers: number,
  ) {
    this.queue = `recurring.${name}`;
    this.options = {
      prefix: 'sim',
      shards: 1,
      leaseMs: LEASE_MS,
      maxAttempts: MAX_ATTEMPTS,
      deadLetter: { capacity: 100_000 },
    } as unknown as ResolvedDelayQueueOptions;
    this.keys = new QueueKeys('sim', this.queue, 1);
    const missed = (['latest', 'skip', 'all'] as const)[world.seed % 3];
    this.schedule = new RepeatSchedule({ everyMs: 1000 }, { missed });
  }

  start(): void {
    this.world.onUnheard((label, commands) => this.unheard(label, commands));
    for (let i = 0; i < this.declarers; i++)
      this.world.spawn(`${this.name}.declarer${i}`, (proc) => this.declarer(proc));
  }

  dataLost(): void {
    // The run's lease went with the data; a tick placed again after the loss is after Redis' now.
    this.running = undefined;
  }

  /** An end, failure or give-back Redis ran unheard ended the run if it still held the lease. */
  private unheard(label: string, commands: Command[]): void {
    const script = commands[commands.length - 1];
    if (!String(script[3] ?? '').includes(`{${this.queue}:`)) return;
    const run = this.running;
    if (run && ['delay-advance', 'delay-fail', 'delay-release'].includes(label) && script.includes(run.token))
      run.settled = true;
  }

  /** A process with the `@Recurring` method: its declarations, and the consumer of the schedule's queue. */
  private async declarer(proc: Proc): Promise<void> {
    const scripts = scriptsFor(this.world.issuer(proc));
    const store = new DelayQueueStore(scripts, this.keys, this.options);
    const recurring = new RecurringStore(scripts, 'sim');
    const clock = { estimate: () => this.world.now() } as unknown as ServerClock;
    const occurrences = new RepeatOccurrences(store, clock);
    const state = { firstDeclaredAt: 0, inEffect: this.schedule.text, landed: false };
    const declaring = (async () => {
      while (proc.alive && !proc.stopping) {
        await this.declare(proc, store, recurring, state);
        await this.world.sleep(proc, DECLARE_EVERY_MS);
      }
    })();
    void this.world.guard(declaring);
    const held: { run: Run; task: ClaimedTask }[] = [];
    while (proc.alive && !proc.stopping) {
      let tasks: ClaimedTask[] = [];
      let serverNow = 0;
      let nextDueAt = -1;
      try {
        ({ tasks, serverNow, nextDueAt } = await store.claim(SHARD, 1));
      } catch (error) {
        if (!(error instanceof LostReply)) throw error;
      }
      for (const task of tasks) {
        const plan = occurrences.plan(task, serverNow, MAX_ATTEMPTS);
        const run = this.claimed(task, plan, serverNow);
        held.push({ run, task });
        void this.world.guard(this.handle(proc, store, occurrences, task, plan, run)).finally(() =>
          held.splice(
            held.findIndex((h) => h.run === run),
            1,
          ),
        );
      }
      // Idle, it sleeps until the next due time the claim told of (wake-ups cut it short in the runtime).
      const idleMs = nextDueAt > serverNow ? Math.min(nextDueAt - serverNow, IDLE_POLL_MS) : IDLE_POLL_MS;
      await this.world.sleep(proc, tasks.length > 0 ? 0 : this.world.rng.int(Math.min(20, idleMs), idleMs));
    }
    if (!proc.alive) return;
    // Shutdown: runs given back (never counted: `@Recurring` has no handlerTimeoutMs), the declaration withdrawn.
    for (const { run, task } of [...held]) {
      if (run.settled) continue;
      try {
        if (await store.release(SHARD, task.id, task.token, false, 'shut down')) run.settled = true;
      } catch (error) {
        if (!(error instanceof LostReply)) throw error;
      }
    }
    try {
      await recurring.withdraw(store, proc.name);
    } catch (error) {
      if (!(error instanceof LostReply)) throw error;
    }
  }

  /** RecurringDeclaration.send: one declaration, its window computed again with what Redis replied. */
  private async declare(
    proc: Proc,
    store: DelayQueueStore,
    recurring: RecurringStore,
    state: { firstDeclaredAt: number; inEffect: string; landed: boolean },
  ): Promise<void> {
    const declaration = {
      id: this.name,
      declarer: proc.name,
      schedule: this.schedule.text,
      declaredBy: `Sim.${this.name} on ${proc.name}`,
      aliveMs: DECLARER_ALIVE_MS,
      firstDeclaredAt: state.firstDeclaredAt,
      keepMs: FORGOTTEN_AFTER_MS,
    };
    try {
      let serverNow = this.world.now();
      let windowFor = state.inEffect;
      let declared: RecurringDeclared;
      for (let call = 1; ; call++) {
        const window = RepeatSchedule.parse(windowFor).window(serverNow);
        declared = await recurring.declare(store, { ...declaration, windowFor, window });
        if ((declared.status !== 'clock' && declared.status !== 'winner') || call === DECLARE_CALLS) break;
        serverNow = declared.serverNow;
        windowFor = declared.inEffect;
      }
      if (declared.status === 'clock' || declared.status === 'winner' || declared.status === 'ended') {
        this.world.log(`model: ${this.name} declaration by ${proc.name} refused (${declared.status})`);
        return;
      }
      const own = declared.declarations.find((each) => each.schedule === this.schedule.text);
      if (own) state.firstDeclaredAt = own.firstDeclaredAt;
      state.inEffect = declared.inEffect;
      const lost = state.landed && declared.status === 'created';
      if (!state.landed || lost) await recurring.index(this.name, `Sim.${this.name}`);
      state.landed = true;
    } catch (error) {
      if (!(error instanceof LostReply)) throw error;
    }
  }

  /** A claimed occurrence: a run of its tick, unless the plan skips it. */
  private claimed(task: ClaimedTask, plan: OccurrencePlan, serverNow: number): Run {
    const occurrence = plan.occurrence.occurrence;
    const run: Run = { occurrence, token: task.token, leaseUntil: serverNow + LEASE_MS, settled: false };
    const previous = this.running;
    if (previous && !previous.settled && previous.leaseUntil > serverNow)
      violated(
        'one-run-per-tick',
        `${this.name}: tick +${occurrence - this.world.startMs} claimed (attempt ${task.attempt}) while the run of tick +${previous.occurrence - this.world.startMs} holds the lease for ${previous.leaseUntil - serverNow} ms more`,
      );
    if (plan.skip === undefined && this.completed.has(occurrence))
      violated(
        'one-run-per-tick',
        `${this.name}: tick +${occurrence - this.world.startMs} runs again (attempt ${task.attempt}) after its run completed`,
      );
    this.running = run;
    this.world.log(
      `model: ${this.name} tick +${occurrence - this.world.startMs} ${plan.skip ? `skipped (${plan.skip})` : 'runs'}, attempt ${task.attempt}, run ${this.runs++}`,
    );
    return run;
  }

  private async handle(
    proc: Proc,
    store: DelayQueueStore,
    occurrences: RepeatOccurrences,
    task: ClaimedTask,
    plan: OccurrencePlan,
    run: Run,
  ): Promise<void> {
    const rng = this.world.rng;
    let outcome: 'completed' | 'failed' | 'skipped' = plan.skip ?? 'completed';
    if (plan.skip === undefined) {
      if (this.world.now() >= run.leaseUntil) {
        this.world.log(`${proc.name}: tick +${run.occurrence - this.world.startMs} not started, its lease ran out`);
        return;
      }
      let left = rng.chance(0.1) ? rng.int(LEASE_MS, 3 * LEASE_MS) : rng.int(0, LEASE_MS / 2);
      while (left > 0 && proc.alive) {
        const slice = Math.min(left, Math.ceil(LEASE_MS / 3));
        await this.world.sleep(proc, slice);
        left -= slice;
        if (left <= 0 || !proc.alive) break;
        try {
          const [held] = await store.extend(SHARD, [{ id: task.id, token: task.token }]);
          if (!held) return;
          run.leaseUntil = this.world.now() + LEASE_MS;
        } catch (error) {
          if (!(error instanceof LostReply)) throw error;
        }
      }
      if (!proc.alive || proc.stopping) return; // left to the shutdown's give-back
      if (rng.chance(0.2)) outcome = 'failed';
    }
    try {
      if (outcome === 'failed' && task.attempt < MAX_ATTEMPTS) {
        if (await store.fail(SHARD, task.id, task.token, RETRY_DELAY_MS, 'handler failed')) run.settled = true;
        return;
      }
      const error = outcome === 'completed' ? '' : 'handler failed';
      const ended = await occurrences.end(SHARD, task, plan, outcome, error);
      if (ended.status === 'clock' || ended.status === 'changed')
        this.world.log(`model: ${this.name} occurrence not placed (${ended.status})`);
      if (ended.status !== 'fenced' && outcome === 'completed') this.completed.add(run.occurrence);
      run.settled = true;
    } catch (error) {
      if (!(error instanceof LostReply)) throw error;
    }
  }

  /** At the end, declarers running: the schedule is in Redis, declared again after any loss. */
  audit(): void {
    const repeat = this.world.read(['HGET', this.keys.key(SHARD, 'repeats'), this.name]);
    if (repeat === null)
      violated('recurring-redeclared', `${this.name}: no schedule in Redis at the end, with its declarers running`);
  }
}
