import { Logger } from '@nestjs/common';
import type { DelayQueue } from '../delay-queue/delay-queue';
import { RepeatSchedule } from '../delay-queue/repeat-schedule';
import { clockAdrift, noTickAfterNow } from './recurring.messages';
import type { QueueEvents } from '../events/queue-events';
import type { ServerClock } from '../redis/server-clock';
import type { LiveDeclaration, RecurringDeclareInput, RecurringDeclared } from './lua/recurring-declare';
import type { RecurringStore } from './recurring.store';

/**
 * How often a process declares its `@Recurring` schedules again (DeclaredState): the worst delay before a
 * schedule lost with Redis' data is placed again (FLUSHALL drops no connection, so a reconnection alone
 * would not tell), and what keeps its declarations alive. One script call per schedule per round.
 */
export const DECLARE_EVERY_MS = 3000;
/**
 * A process that has not declared its schedules for this long is taken to be gone (its declarations
 * stop counting): five rounds of DECLARE_EVERY_MS, so that a slow round or two
 * never makes a live process look gone, while a rollback takes over within about this long after the
 * last process of the newer version died without a shutdown (a shutdown withdraws at once).
 */
export const DECLARER_ALIVE_MS = 5 * DECLARE_EVERY_MS;
/**
 * How long a schedule no live process declares is remembered, with when it was first declared: a pod
 * of an older version restarting during a rolling deploy finds its schedule older than the new one.
 */
export const FORGOTTEN_AFTER_MS = 30 * 24 * 3600_000;
/**
 * Calls whose tick window missed Redis' clock, or was computed for another schedule than the one in
 * effect, are made again with what Redis replied; a fourth miss is reported as it is.
 */
export const DECLARE_CALLS = 4;

/** Its schedule as a person reads it in a log line. */
function describe(schedule: string): string {
  const { cron, tz, everyMs, startAt, endAt, missed } = JSON.parse(schedule) as Record<string, unknown>;
  const parts = [cron !== undefined ? `cron "${String(cron)}"` : `everyMs ${String(everyMs)}`];
  if (tz !== undefined) parts.push(`tz ${String(tz)}`);
  if (startAt !== undefined) parts.push(`startAt ${new Date(Number(startAt)).toISOString()}`);
  if (endAt !== undefined) parts.push(`endAt ${new Date(Number(endAt)).toISOString()}`);
  parts.push(`missed '${String(missed)}'`);
  return `{ ${parts.join(', ')} }`;
}

function describeDeclaration({ schedule, declaredBy, firstDeclaredAt }: LiveDeclaration): string {
  return `${describe(schedule)} declared by ${declaredBy || 'a process'} (first on ${new Date(firstDeclaredAt).toISOString()})`;
}

/**
 * One `@Recurring` schedule as this process declares it: declared at start and again every few seconds
 * (DeclaredState), which renews this process' claim that it is alive, places the schedule again if Redis
 * lost it, and lets the schedule in effect follow the processes alive (see recurring-declare.lua).
 */
export class RecurringDeclaration {
  /** Whether a declaration landed since this process started: after that, a schedule created again was lost. */
  landed = false;
  /** Whether the last declaration failed (logged once, until one lands). */
  failing = false;
  /** When this process' schedule was first declared, as Redis said last: restored if Redis loses it. */
  private firstDeclaredAt = 0;
  private inEffect: string;
  /** The live declarations last logged about (sorted schedules, the one in effect first). */
  private reported = '';
  private readonly logger = new Logger('QueueModule');
  private inFlight?: Promise<void>;

  constructor(
    readonly name: string,
    readonly label: string,
    readonly schedule: RepeatSchedule,
    /** Its own one-shard queue, whose consumer runs the method for each occurrence. */
    readonly queue: DelayQueue,
    private readonly store: RecurringStore,
    private readonly clock: ServerClock,
    private readonly declarer: { id: string; where: string },
    private readonly events: QueueEvents,
  ) {
    this.inEffect = schedule.text;
  }

  /**
   * Declares it (again, when Redis lost it: said in a warning). Rejects as a queue call does. A call made
   * while one is in flight (start-up and a reconnection at once) shares it.
   */
  declare(): Promise<void> {
    this.inFlight ??= this.send().finally(() => (this.inFlight = undefined));
    return this.inFlight;
  }

  private async send(): Promise<void> {
    const declared = await this.call({
      id: this.name,
      declarer: this.declarer.id,
      schedule: this.schedule.text,
      declaredBy: `${this.label} on ${this.declarer.where}`,
      aliveMs: DECLARER_ALIVE_MS,
      firstDeclaredAt: this.firstDeclaredAt,
      keepMs: FORGOTTEN_AFTER_MS,
    });
    if (declared.status === 'clock' || declared.status === 'winner') throw clockAdrift(this.name);
    if (declared.status === 'ended') throw noTickAfterNow(this.name, describe(declared.inEffect));
    const own = declared.declarations.find((each) => each.schedule === this.schedule.text);
    if (own) this.firstDeclaredAt = own.firstDeclaredAt;
    this.inEffect = declared.inEffect;
    const lost = this.landed && declared.status === 'created';
    // The index `list()` reads: a schedule whose method is gone stays listed until removed.
    if (!this.landed || lost) await this.store.index(this.name, this.label);
    if (lost) {
      this.logger.warn(
        `@Recurring "${this.name}": its schedule was missing in Redis (its data was lost: FLUSHALL, a restart ` +
          `without persistence, a failover to an empty replica?); declared it again, next run at ${new Date(declared.nextRunAt).toISOString()}`,
      );
      if (this.events.has('state.redeclared'))
        this.events.emit('state.redeclared', { queue: this.queue.name, what: 'recurring', name: this.name });
    }
    if (declared.status === 'changed')
      this.logger.log(`@Recurring "${this.name}" now runs on ${describe(declared.inEffect)}`);
    this.landed = true;
    this.reportConflict(declared);
  }

  /** Withdraws this process' declaration, so that the schedule of the processes still alive takes effect at once. */
  withdraw(): Promise<void> {
    return this.store.withdraw(this.queue.store, this.declarer.id);
  }

  /**
   * One declaration: the script decides which declared schedule is in effect and places that one, from
   * a window computed for it: first for the one in effect last time, then for the one the script names.
   * Wakes the consumers when an occurrence was placed.
   */
  private async call(declaration: Omit<RecurringDeclareInput, 'window' | 'windowFor'>): Promise<RecurringDeclared> {
    let serverNow = this.clock.estimate();
    let windowFor = this.inEffect;
    for (let call = 1; ; call++) {
      const window = RepeatSchedule.parse(windowFor).window(serverNow);
      const declared = await this.store.declare(this.queue.store, { ...declaration, windowFor, window });
      if (declared.status === 'created' || declared.status === 'changed')
        this.queue.hints.publish(0, declared.nextRunAt, this.clock.estimate());
      if ((declared.status !== 'clock' && declared.status !== 'winner') || call === DECLARE_CALLS) return declared;
      serverNow = declared.serverNow;
      windowFor = declared.inEffect;
    }
  }

  /**
   * Says, once per change, when live processes declare different schedules: which one is in effect and
   * why, and every other, with who declares them.
   */
  private reportConflict({ inEffect, declarations }: RecurringDeclared): void {
    const schedules = declarations.map((each) => each.schedule).sort();
    const key = [inEffect, ...schedules].join('\n');
    if (key === this.reported) return;
    const wasConflict = this.reported.includes('\n', this.reported.indexOf('\n') + 1);
    this.reported = key;
    if (declarations.length < 2) {
      if (wasConflict)
        this.logger.log(`@Recurring "${this.name}": live processes agree again, ${describe(inEffect)} is in effect`);
      return;
    }
    const winner = declarations.find((each) => each.schedule === inEffect)!;
    const others = declarations.filter((each) => each !== winner).map(describeDeclaration);
    const mine = inEffect === this.schedule.text ? 'this process declares it' : 'this process declares another';
    this.logger.warn(
      `@Recurring "${this.name}": running processes declare ${declarations.length} different schedules. In effect: ` +
        `${describeDeclaration(winner)}, the most recently first declared (${mine}); also declared: ${others.join('; ')}. ` +
        'The newest definition among live processes wins: a process of an older version does not bring its ' +
        'schedule back, and it takes over once every process declaring a newer one is gone (docs/recurring.md)',
    );
  }
}
