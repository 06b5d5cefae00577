import { Injectable, Logger } from '@nestjs/common';
import { randomUUID } from 'node:crypto';
import { hostname } from 'node:os';
import type { DelayQueue } from '../delay-queue/delay-queue';
import { DelayQueueStore } from '../delay-queue/delay-queue.store';
import type { RepeatSchedule } from '../delay-queue/repeat-schedule';
import { QueueConnectionError } from '../errors';
import { QueueEvents } from '../events/queue-events';
import type { DelayQueueOptions, RecurringScheduleInfo } from '../interfaces';
import { RECURRING_QUEUE_PREFIX } from '../queue.constants';
import { QueueRegistry } from '../queue.registry';
import { QueueSettings } from '../queue.settings';
import { QueueKeys } from '../redis/keys';
import { deleteQueueMeta } from '../redis/queue-meta';
import { RedisConnection } from '../redis/redis-connection';
import { describeError } from '../utils/errors';
import { resolveOptions } from '../validation/apply-rules';
import { DelayQueueOptionsRules } from '../validation/delay-queue-options';
import { assertName } from '../validation/payload';
import { DECLARE_EVERY_MS, RecurringDeclaration } from './recurring-declaration';
import type { RecurringPlan } from './recurring-options';
import { decodeDeclarations, RecurringStore } from './recurring.store';
import { nameTaken, stillDeclared } from './recurring.messages';

/**
 * The `@Recurring` schedules, by name, as `@nestjs/schedule`'s SchedulerRegistry holds its jobs: those
 * this process declares (added as QueueOrchestrator mounts them, a name taken twice refused), and every
 * schedule any process of the application declared, listed with those no process declares any more (a
 * `@Recurring` removed from the code) for `remove()`.
 */
@Injectable()
export class RecurringSchedules {
  private readonly declarations = new Map<string, RecurringDeclaration>();
  /** This process among those declaring schedules: pids repeat across containers, hence the random part. */
  private readonly declarer = {
    id: `${hostname()}:${process.pid}:${randomUUID().slice(0, 8)}`,
    where: `${hostname()} pid ${process.pid}`,
  };
  private readonly store: RecurringStore;
  /** Set at shutdown: a round of DeclaredState still running declares nothing more. */
  private withdrawn = false;
  private readonly logger = new Logger('QueueModule');

  /** @internal Made by Nest (QueueModule), not by the application. */
  constructor(
    private readonly registry: QueueRegistry,
    private readonly connection: RedisConnection,
    private readonly settings: QueueSettings,
    private readonly events: QueueEvents,
  ) {
    this.store = new RecurringStore(connection.scripts, settings.prefix);
  }

  /**
   * @internal Adds the schedule of a `@Recurring` method (`label`), with its own queue made through the
   * registry; refused when another method took its name. Declared by `declareAll`.
   */
  add(plan: RecurringPlan, label: string): RecurringDeclaration {
    const { name, schedule, maxAttempts, backoff } = plan;
    const other = this.declarations.get(name);
    if (other !== undefined) throw nameTaken(`@Recurring on ${label}`, name, other.label);
    const queue = this.registry.delayQueue(
      {
        ...recurringQueueOptions(name),
        ...(maxAttempts !== undefined && { maxAttempts }),
        ...(backoff !== undefined && { backoff }),
      },
      undefined,
      { reportsLoss: false },
    );
    const { connection, events, declarer, store } = this;
    const declaration = new RecurringDeclaration(
      name,
      label,
      schedule,
      queue,
      store,
      connection.clock,
      declarer,
      events,
    );
    this.declarations.set(name, declaration);
    return declaration;
  }

  /** @internal The queues of the schedules this process declares (their records are asserted at start-up). */
  queues(): DelayQueue[] {
    return [...this.declarations.values()].map(({ queue }) => queue);
  }

  /**
   * @internal The first declaration of each schedule, at start-up. With `startup: 'continue'` a Redis that
   * does not answer does not stop the application: the schedule is declared in the background
   * (DeclaredState) once it does.
   */
  async declareAll(): Promise<void> {
    for (const declaration of this.declarations.values()) {
      try {
        await declaration.declare();
      } catch (error) {
        if (!(error instanceof QueueConnectionError) || this.settings.startup !== 'continue') throw error;
        declaration.failing = true;
        this.logger.warn(
          `@Recurring "${declaration.name}" could not be declared yet (${error.message}); ` +
            `declaring it in the background every ${DECLARE_EVERY_MS} ms until Redis answers (startup: 'continue')`,
        );
      }
    }
  }

  /**
   * Declares every schedule of this process again (DeclaredState, every few seconds and on reconnection):
   * it renews this process' declarations, places a schedule Redis lost, and follows the schedule in effect.
   * A failure is logged once until a declaration lands again.
   */
  async redeclare(): Promise<void> {
    for (const declaration of this.declarations.values()) {
      if (this.withdrawn) return;
      try {
        await declaration.declare();
        if (declaration.failing)
          this.logger.log(`@Recurring "${declaration.name}" declared again now that Redis answers`);
        declaration.failing = false;
      } catch (error) {
        if (declaration.failing) continue;
        declaration.failing = true;
        this.logger.warn(
          `@Recurring "${declaration.name}" could not be declared (${describeError(error)}); trying again every ${DECLARE_EVERY_MS} ms`,
        );
      }
    }
  }

  /**
   * Withdraws this process' declarations (at shutdown), so that the schedule of the processes still
   * alive takes effect at once rather than when this one's declarations expire.
   */
  async withdraw(): Promise<void> {
    this.withdrawn = true;
    const sent = [...this.declarations.values()].filter(({ landed, failing }) => landed || failing);
    await Promise.all(sent.map((declaration) => declaration.withdraw()));
  }

  /** The schedules this process declares: name → schedule. */
  declared(): Map<string, RepeatSchedule> {
    return new Map([...this.declarations].map(([name, { schedule }]) => [name, schedule]));
  }

  /**
   * Every schedule declared by any process of the application (under this prefix), with its next and
   * last run; `handled` says whether this process runs it. A schedule no process declares any more
   * stays listed (and its next run falls behind) until `remove(name)`. O(schedules).
   */
  async list(): Promise<RecurringScheduleInfo[]> {
    const index = await this.store.indexed();
    const listed = await Promise.all(
      Object.entries(index).map(async ([name, label]) => {
        const queue = this.queueStoreOf(name);
        const [repeat, fields] = await Promise.all([queue.repeatInfo(0, name), this.store.declarations(queue)]);
        if (repeat === null) return undefined;
        const { cron, tz, everyMs, missed, nextRunAt, lastRunAt, lastOutcome, lastSuccessAt } = repeat;
        const info: RecurringScheduleInfo = {
          name,
          declaredBy: label,
          handled: this.declarations.has(name),
          ...(cron !== undefined && { cron }),
          ...(tz !== undefined && { tz }),
          ...(everyMs !== undefined && { everyMs }),
          missed,
          nextRunAt,
          ...(lastRunAt !== undefined && { lastRunAt }),
          ...(lastOutcome !== undefined && { lastOutcome }),
          ...(lastSuccessAt !== undefined && { lastSuccessAt }),
          declarations: decodeDeclarations(fields, repeat, this.connection.clock.estimate()),
        };
        return info;
      }),
    );
    return listed.filter((info) => info !== undefined).sort((a, b) => a.name.localeCompare(b.name));
  }

  /**
   * Deletes a schedule no process of this one declares (a `@Recurring` removed from the code): its
   * occurrence, its queue's keys and its entry in the list. True when it was listed. Refused while this
   * process declares it; other processes still declaring it declare it again within seconds.
   */
  async remove(name: string): Promise<boolean> {
    assertName(name, 'name');
    const declaration = this.declarations.get(name);
    if (declaration !== undefined) throw stillDeclared(name, declaration.label);
    const removed = await this.store.unindex(name);
    const queue = this.queueStoreOf(name);
    await queue.obliterate(0);
    await deleteQueueMeta(this.connection, queue.keys);
    return removed;
  }

  /**
   * The store of a schedule's queue: this process' own when it runs the schedule, else one over the
   * same keys (a schedule that only another process, or none any more, declares).
   */
  private queueStoreOf(name: string): DelayQueueStore {
    const own = this.declarations.get(name);
    if (own !== undefined) return own.queue.store;
    const options = resolveOptions(DelayQueueOptionsRules, recurringQueueOptions(name), `@Recurring "${name}"`);
    const keys = new QueueKeys(this.settings.prefix, RECURRING_QUEUE_PREFIX + name, 1);
    return new DelayQueueStore(this.connection.scripts, keys, options);
  }
}

/**
 * A schedule's own one-shard queue `recurring.<name>`, so that its retries and lease are its own and it
 * shows on the dashboard, in metrics and in health like any queue. Its lease is short, so that a run
 * whose process died is taken over (and the schedule goes on) within two seconds; a run that lives
 * longer keeps it by the consumer's heartbeat.
 */
function recurringQueueOptions(name: string): DelayQueueOptions {
  return { name: RECURRING_QUEUE_PREFIX + name, shards: 1, leaseMs: 2000 };
}
