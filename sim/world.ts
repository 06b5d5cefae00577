import { createHash } from 'node:crypto';
import { type Command, Engine, type Issue } from './engine';
import { Rng } from './rng';

/** A simulated process: an actor's loop, which the scheduler may crash, stall or shut down. */
export class Proc {
  alive = true;
  /** Asked to shut down: its loop gives its work back and ends. */
  stopping = false;
  /** Its calls and wake-ups wait until this time (a GC pause, a frozen process). */
  stalledUntil = 0;

  constructor(
    readonly id: number,
    readonly kind: string,
    /** It runs the previous release (a process not yet replaced in a rolling deploy). */
    readonly previous = false,
  ) {}

  get name(): string {
    return `${this.kind}#${this.id}`;
  }
}

/** The reply of a call that never came back: it may or may not have been applied, as `applied` says. */
export class LostReply extends Error {
  constructor(readonly applied: boolean) {
    super(`reply lost (${applied ? 'applied' : 'not applied'})`);
  }
}

/** A step of the history that broke a promise. */
export class Violation extends Error {
  constructor(
    readonly invariant: string,
    readonly quote: string,
    readonly detail: string,
  ) {
    super(`${invariant}: ${detail}`);
  }
}

interface Pending {
  proc: Proc;
  label: string;
  commands: Command[];
  pick: (replies: unknown[]) => unknown;
  resolve: (value: unknown) => void;
  reject: (error: unknown) => void;
}

interface Sleeper {
  proc: Proc;
  at: number;
  resolve: () => void;
}

/** What the scheduler may do to the processes and to Redis, each a chance per step. */
export interface Faults {
  lostReply: number;
  crash: number;
  stall: number;
  shutdown: number;
  dataLoss: number;
  clockJump: number;
}

export const NO_FAULTS: Faults = { lostReply: 0, crash: 0, stall: 0, shutdown: 0, dataLoss: 0, clockJump: 0 };

/** Fixed start of the simulated clock: a seed gives the same times in every run. */
export const START_MS = Date.UTC(2026, 0, 1);

/** A step of the run, as recorded for a replay against a redis-server. */
export interface Recorded {
  at: number;
  commands: Command[];
  /** The engine's replies, an error as 'error'. */
  replies: unknown[];
}

/**
 * The simulated world: the engine, the processes and one scheduler deciding every interleaving from
 * the seed. A process' call to Redis waits in `pending` until the scheduler runs it; its sleeps wait
 * for the simulated clock. Nothing here reads the wall clock or Math.random.
 */
export class World {
  readonly rng: Rng;
  readonly startMs = START_MS;
  readonly history: string[] = [];
  readonly recorded: Recorded[] = [];
  steps = 0;
  scriptCalls = 0;
  faults: Faults;
  leaseMs = 1000;
  /** The end of a run: no faults, producers stop, consumers finish what is left. */
  draining = false;
  private readonly lossListeners: (() => void)[] = [];
  private readonly unheardListeners: ((label: string, commands: Command[], replies: unknown[]) => void)[] = [];
  private readonly pending: Pending[] = [];
  private readonly sleepers: Sleeper[] = [];
  private readonly procs: Proc[] = [];
  private nextProc = 1;
  /** Spawns a process of a kind again after a crash or a shutdown. */
  private readonly restarts = new Map<string, () => void>();
  private readonly checks: (() => void)[] = [];
  private violation?: Violation;
  /** Kinds of processes of which some run the previous release, and the share of them that do. */
  private previousKinds?: { runs: (kind: string) => boolean; share: number };
  /** What Redis ran in the step under way: a check of state nothing of it touched may skip reading it. */
  private applied: Command[] = [];
  private keysOfStep?: Set<string>;

  private constructor(
    readonly seed: number,
    readonly engine: Engine,
    faults: Faults,
    /** Keeps every command and reply, for a replay on a redis-server (it costs memory and time). */
    private readonly recording: boolean,
  ) {
    this.rng = new Rng(seed);
    this.faults = faults;
  }

  static async create(seed: number, faults: Faults, recording = false): Promise<World> {
    const engine = await Engine.start(START_MS);
    // A run's steps never leave the microtask queue (see settle): the event loop gets its turn here.
    await new Promise((resolve) => setImmediate(resolve));
    return new World(seed, engine, faults, recording);
  }

  now(): number {
    return this.engine.now();
  }

  log(line: string): void {
    this.history.push(`${this.steps} +${this.now() - START_MS} ${line}`);
  }

  /** From now on, a `share` of the processes of the kinds `runs` names start on the previous release. */
  mixVersions(runs: (kind: string) => boolean, share: number): void {
    this.previousKinds = { runs, share };
  }

  /** A check run after every step; it throws a Violation. */
  check(invariant: () => void): void {
    this.checks.push(invariant);
  }

  /**
   * Starts a process of `kind` running `body`, and again each time one of that kind ends, unless the
   * run drains and it is `producing` (its loop ends by itself then).
   */
  spawn(kind: string, body: (proc: Proc) => Promise<void>, producing = false): void {
    const start = () => {
      const mixed = this.previousKinds;
      const previous = mixed !== undefined && mixed.runs(kind) && this.rng.chance(mixed.share);
      const proc = new Proc(this.nextProc++, kind, previous);
      this.procs.push(proc);
      this.log(`${proc.name} starts${previous ? ' on the previous release' : ''}`);
      void this.guard(body(proc)).then(() => this.ended(proc));
    };
    this.restarts.set(kind, () => {
      if (!(producing && this.draining)) start();
    });
    start();
  }

  /**
   * Keeps what a process' own code threw: a broken promise, or an error nothing in the library should
   * throw (a script's error), which ends the run as a violation too.
   */
  guard(work: Promise<void>): Promise<void> {
    return work.catch((error: unknown) => {
      this.violation ??=
        error instanceof Violation
          ? error
          : new Violation(
              'unexpected-error',
              'a call of the library failed where nothing should',
              String((error as Error)?.stack ?? error),
            );
    });
  }

  private ended(proc: Proc): void {
    if (!proc.alive) return;
    proc.alive = false;
    this.log(`${proc.name} ended`);
    this.restarts.get(proc.kind)?.();
  }

  /** The `Issue` of a process: its calls become steps; a dead process' calls never answer. */
  issuer(proc: Proc): Issue {
    const issue: Issue = (label, commands, pick) =>
      new Promise((resolve, reject) => {
        if (!proc.alive) return;
        this.pending.push({ proc, label, commands, pick, resolve, reject });
      });
    issue.previous = proc.previous;
    return issue;
  }

  sleep(proc: Proc, ms: number): Promise<void> {
    return new Promise((resolve) => {
      if (proc.alive) this.sleepers.push({ proc, at: this.now() + Math.max(0, ms), resolve });
    });
  }

  /** Runs a command outside the scheduler (invariants' reads): never recorded, changes nothing. */
  read(command: Command): unknown {
    return this.engine.run(command);
  }

  /** One step chosen by the seed; false once nothing is left to run. */
  async step(): Promise<boolean> {
    this.steps++;
    this.applied = [];
    this.keysOfStep = undefined;
    const now = this.now();
    const ready = (proc: Proc) => proc.alive && proc.stalledUntil <= now;
    const calls = this.pending.filter((call) => ready(call.proc));
    const woken = this.sleepers.filter((sleeper) => ready(sleeper.proc) && sleeper.at <= now);
    const faults = this.faults;
    const roll = this.rng.next();
    let threshold = 0;
    const chance = (p: number) => roll < (threshold += p);
    if (chance(faults.crash)) this.crash();
    else if (chance(faults.stall)) this.stall();
    else if (chance(faults.shutdown)) this.shutdown();
    else if (chance(faults.dataLoss)) this.loseData();
    else if (chance(faults.clockJump)) this.move(this.rng.int(1, 4 * this.leaseMs), 'clock jumps');
    else if (calls.length + woken.length === 0 || chance(0.08)) {
      if (!this.idle()) return false;
    } else {
      const index = this.rng.int(0, calls.length + woken.length - 1);
      if (index < calls.length) this.runCall(calls[index]);
      else this.wake(woken[index - calls.length]);
    }
    await settle();
    if (this.violation) throw this.violation;
    for (const invariant of this.checks) invariant();
    return true;
  }

  /** Moves the clock: a little, or to the next wake-up when nothing is ready. False: nothing will ever run. */
  private idle(): boolean {
    const now = this.now();
    const next = Math.min(
      ...this.sleepers.filter((s) => s.proc.alive).map((s) => Math.max(s.at, s.proc.stalledUntil)),
      ...this.pending.filter((c) => c.proc.alive).map((c) => c.proc.stalledUntil),
    );
    if (!Number.isFinite(next)) return false;
    this.move(Math.max(next - now, this.rng.int(1, 50)), 'time passes');
    return true;
  }

  private move(ms: number, why: string): void {
    this.engine.move(ms);
    this.log(`${why} ${ms} ms`);
  }

  private runCall(call: Pending): void {
    this.pending.splice(this.pending.indexOf(call), 1);
    const lost = this.rng.chance(this.faults.lostReply);
    const applied = !lost || this.rng.chance(0.5);
    let replies: unknown[] = [];
    let error: unknown;
    if (applied) {
      try {
        replies = this.apply(call.proc, call.label, call.commands);
      } catch (failure) {
        error = failure;
      }
    }
    if (lost) {
      if (applied) this.unheard(call.label, call.commands, replies);
      this.log(`${call.proc.name} ${call.label}: reply lost (${applied ? 'applied' : 'not applied'})`);
      call.reject(new LostReply(applied));
    } else if (error !== undefined) call.reject(error);
    else call.resolve(call.pick(replies));
  }

  /**
   * The keys the commands of the step just run named: the only keys it may have changed, since the
   * library's scripts touch only the keys they declare (as Redis Cluster requires). A loss of Redis'
   * data is not among them: it leaves nothing to check.
   */
  touched(): Set<string> {
    if (this.keysOfStep) return this.keysOfStep;
    const keys = new Set<string>();
    for (const command of this.applied) {
      if (command[0] === 'EVALSHA') for (let i = 0; i < Number(command[2]); i++) keys.add(String(command[3 + i]));
      else if (command.length > 1) keys.add(String(command[1]));
    }
    this.keysOfStep = keys;
    return keys;
  }

  private apply(proc: Proc, label: string, commands: Command[]): unknown[] {
    const replies: unknown[] = [];
    if (this.recording) this.recorded.push({ at: this.now(), commands, replies });
    this.applied.push(...commands);
    this.scriptCalls++;
    try {
      for (const command of commands) replies.push(this.engine.run(command));
      this.log(`${proc.name} ${label} ${brief(commands[commands.length - 1])} -> ${digest(replies)}`);
      return replies;
    } catch (error) {
      replies.push('error');
      this.log(`${proc.name} ${label} ${brief(commands[commands.length - 1])} -> error ${(error as Error).message}`);
      throw error;
    }
  }

  private wake(sleeper: Sleeper): void {
    this.sleepers.splice(this.sleepers.indexOf(sleeper), 1);
    sleeper.resolve();
  }

  private pick(): Proc | undefined {
    const alive = this.procs.filter((proc) => proc.alive && !proc.stopping);
    return alive.length === 0 ? undefined : alive[this.rng.int(0, alive.length - 1)];
  }

  /** A process dies: its calls in flight reach Redis or not, its handlers are abandoned, its leases lapse. */
  private crash(): void {
    const proc = this.pick();
    if (!proc) return;
    for (const call of this.pending.filter((c) => c.proc === proc)) {
      this.pending.splice(this.pending.indexOf(call), 1);
      if (this.rng.chance(0.5)) {
        try {
          this.unheard(
            call.label,
            call.commands,
            this.apply(proc, `${call.label} (sent before the crash)`, call.commands),
          );
        } catch {
          // Nobody is left to hear of it.
        }
      }
    }
    for (const sleeper of this.sleepers.filter((s) => s.proc === proc))
      this.sleepers.splice(this.sleepers.indexOf(sleeper), 1);
    this.log(`${proc.name} crashes`);
    proc.alive = false;
    this.restarts.get(proc.kind)?.();
  }

  private stall(): void {
    const proc = this.pick();
    if (!proc) return;
    proc.stalledUntil = this.now() + this.rng.int(this.leaseMs / 2, 3 * this.leaseMs);
    this.log(`${proc.name} stalls until +${proc.stalledUntil - START_MS}`);
  }

  private shutdown(): void {
    const proc = this.pick();
    if (!proc) return;
    proc.stopping = true;
    this.log(`${proc.name} is asked to shut down`);
  }

  private loseData(): void {
    this.apply({ name: 'redis' } as Proc, 'loses its data', [['FLUSHALL']]);
    for (const listener of this.lossListeners) listener();
  }

  /** Told of every call Redis ran whose reply its process never got (lost, or the process crashed). */
  onUnheard(listener: (label: string, commands: Command[], replies: unknown[]) => void): void {
    this.unheardListeners.push(listener);
  }

  private unheard(label: string, commands: Command[], replies: unknown[]): void {
    for (const listener of this.unheardListeners) listener(label, commands, replies);
  }

  onDataLoss(listener: () => void): void {
    this.lossListeners.push(listener);
  }

  /** Stops every fault and ends stalls: what follows is the end's drain. */
  drain(): void {
    this.draining = true;
    this.faults = NO_FAULTS;
    for (const proc of this.procs) proc.stalledUntil = 0;
  }

  /** A process outside the actors (the end's audit), never faulted. */
  auditor(): Proc {
    return new Proc(0, 'audit');
  }

  /** Everything the run did, as text: two runs of a seed give the same. */
  historyHash(): string {
    return createHash('sha256').update(this.history.join('\n')).digest('hex').slice(0, 16);
  }
}

/**
 * Lets every process run until it waits on a call or a sleep again: a process resumes by promises
 * alone (its calls and sleeps are the scheduler's), so once the microtasks are drained it waits again;
 * a tick runs after them, sooner than a turn of the event loop would.
 */
function settle(): Promise<void> {
  return new Promise((resolve) => process.nextTick(resolve));
}

function brief(command: Command): string {
  if (command[0] !== 'EVALSHA') return command.join(' ').slice(0, 160);
  const keys = Number(command[2]);
  return `[${command.slice(3 + keys).join(',')}]`.slice(0, 160);
}

function digest(replies: unknown[]): string {
  const text = JSON.stringify(replies[replies.length - 1]) ?? 'nil';
  return text.length <= 160
    ? text
    : `${text.slice(0, 150)}...#${createHash('sha1').update(text).digest('hex').slice(0, 8)}`;
}
