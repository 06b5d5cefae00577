import { Logger } from '@nestjs/common';
import type { DelayQueue } from '../delay-queue/delay-queue';
import type { RepeatSchedule } from '../delay-queue/repeat-schedule';
import { clockAdrift, noTickAfterNow } from './recurring.messages';
import type { QueueEvents } from '../events/queue-events';
import type { LiveDeclaration, RecurringDeclared } from './lua/recurring-declare';

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
const FORGOTTEN_AFTER_MS = 30 * 24 * 3600_000;

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
  /** Whether the last declaration failed (RecurringSchedules logs that once, until one lands). */
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
    private readonly queue: DelayQueue,
    private readonly declarer: { id: string; where: string },
    private readonly events: QueueEvents,
    /** Records the schedule in the list `RecurringSchedules.list()` reads (a key of its own slot). */
    private readonly index: () => Promise<unknown>,
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
    const declared = await this.queue.declareRecurring(
      this.name,
      {
        declarer: this.declarer.id,
        schedule: this.schedule.text,
        declaredBy: `${this.label} on ${this.declarer.where}`,
        aliveMs: DECLARER_ALIVE_MS,
        firstDeclaredAt: this.firstDeclaredAt,
        keepMs: FORGOTTEN_AFTER_MS,
      },
      this.inEffect,
    );
    if (declared.status === 'clock' || declared.status === 'winner') throw clockAdrift(this.name);
    if (declared.status === 'ended') throw noTickAfterNow(this.name, describe(declared.inEffect));
    const own = declared.declarations.find((each) => each.schedule === this.schedule.text);
    if (own) this.firstDeclaredAt = own.firstDeclaredAt;
    this.inEffect = declared.inEffect;
    const lost = this.landed && declared.status === 'created';
    if (!this.landed || lost) await this.index();
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
