import { Injectable, Logger } from '@nestjs/common';
import { randomUUID } from 'node:crypto';
import { hostname } from 'node:os';
import { bound, ConsumerFactory } from '../consumer.factory';
import type { Consumer } from '../consumer/consumer.registry';
import type { DelayQueue } from '../delay-queue/delay-queue';
import { DelayQueueStore } from '../delay-queue/delay-queue.store';
import { QueueConnectionError, QueueInputError } from '../errors';
import { describeError } from '../utils/errors';
import { DECLARE_EVERY_MS, RecurringDeclaration } from './recurring-declaration';
import { RepeatSchedule } from '../delay-queue/repeat-schedule';
import { QueueKeys } from '../redis/keys';
import { deleteQueueMeta } from '../redis/queue-meta';
import { assertName } from '../validation/payload';
import { QueueEvents } from '../events/queue-events';
import type {
  DelayContext,
  DelayQueueOptions,
  RecurringContext,
  RecurringDeclarationInfo,
  RecurringOptions,
  RecurringScheduleInfo,
  RepeatInfo,
} from '../interfaces';
import { RECURRING_QUEUE_PREFIX } from '../queue.constants';
import type { FoundMethod } from '../queue.explorer';
import { QueueRegistry } from '../queue.registry';
import { QueueSettings } from '../queue.settings';
import { RedisConnection } from '../redis/redis-connection';
import { resolveOptions } from '../validation/apply-rules';
import { MAX_HANDLER_TIMEOUT_MS } from '../validation/consumer-options';
import { DelayQueueOptionsRules } from '../validation/delay-queue-options';
import { nameTaken, refusedAsInput, stillDeclared } from './recurring.messages';
import { resolveRecurring } from './recurring-options';

/**
 * The `@Recurring` schedules, mounted as `@nestjs/schedule` mounts its jobs: each method on a DelayQueue
 * repeat (the repeat `<name>` of its own queue, see `recurringQueueOptions`), and lists them all, with those that no process
 * declares any more (a `@Recurring` removed from the code) for `remove()`. Every replica declares its
 * schedules at start, which changes nothing unless a schedule did.
 */
@Injectable()
export class RecurringSchedules {
  /** The methods this process mounted, by schedule name. */
  private readonly names = new Map<string, string>();
  private readonly declarations = new Map<string, RecurringDeclaration>();
  /** This process among those declaring schedules: pids repeat across containers, hence the random part. */
  private readonly declarer = {
    id: `${hostname()}:${process.pid}:${randomUUID().slice(0, 8)}`,
    where: `${hostname()} pid ${process.pid}`,
  };
  private readonly logger = new Logger('QueueModule');

  /** @internal Made by Nest (QueueModule), not by the application. */
  constructor(
    private readonly registry: QueueRegistry,
    private readonly connection: RedisConnection,
    private readonly settings: QueueSettings,
    private readonly events: QueueEvents,
    private readonly factory: ConsumerFactory,
  ) {}

  /**
   * @internal Mounts a `@Recurring` method (QueueOrchestrator): its queue made through the registry, its
   * schedule declared, and the consumer that runs the method for each occurrence.
   */
  async mount(found: FoundMethod<RecurringOptions>): Promise<Consumer> {
    const { instance, method, label, metadata } = found;
    const where = `@Recurring on ${label}`;
    const plan = await resolveRecurring(metadata, label, (raw, at) => this.factory.decoratorOptions(raw, at));
    const { name, every, tz, missed, handlerTimeoutMs, maxAttempts, backoff } = plan;
    const other = this.names.get(name);
    if (other !== undefined) throw nameTaken(where, name, other);
    this.names.set(name, label);
    let schedule: RepeatSchedule;
    try {
      assertName(name, 'name');
      schedule = new RepeatSchedule(every, {
        ...(tz !== undefined && { tz }),
        ...(missed !== undefined && { missed }),
      });
    } catch (error) {
      // A schedule refused as input is a mistake in the decorator.
      if (error instanceof QueueInputError) throw refusedAsInput(where, error);
      throw error;
    }
    const queue = this.registry.delayQueue({
      ...recurringQueueOptions(name),
      ...(maxAttempts !== undefined && { maxAttempts }),
      ...(backoff !== undefined && { backoff }),
    });
    // Made after the application's modules were initialised: its record is declared here.
    await queue.onModuleInit();
    const declaration = new RecurringDeclaration(name, label, schedule, queue, this.declarer, this.events, () =>
      // The index `list()` reads: a schedule whose method is gone stays listed until removed.
      this.connection.scripts.call((client) => client.hset(this.indexKey(), name, label)),
    );
    this.declarations.set(name, declaration);
    await this.declareFirst(declaration);
    const run = bound(instance, method);
    return this.factory.delayQueueConsumer(
      queue,
      label,
      // No deadline unless asked for: a run past one would only have its signal aborted (the schedule
      // stays held until it ends), and a recurring job's length is its own business.
      { concurrency: 1, handlerTimeoutMs: handlerTimeoutMs ?? MAX_HANDLER_TIMEOUT_MS },
      (_payload: unknown, ctx: DelayContext) =>
        run({
          name,
          occurrence: ctx.repeat?.occurrence ?? ctx.runAt,
          firedAt: ctx.firedAt,
          attempt: ctx.attempt,
          signal: ctx.signal,
        } satisfies RecurringContext),
    );
  }

  /**
   * The first declaration, at start-up. With `startup: 'continue'` a Redis that does not answer does not
   * stop the application: the schedule is declared in the background (DeclaredState) once it does.
   */
  private async declareFirst(declaration: RecurringDeclaration): Promise<void> {
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

  /**
   * Declares every schedule of this process again (DeclaredState, every few seconds and on reconnection):
   * it renews this process' declarations, places a schedule Redis lost, and follows the schedule in effect.
   * A failure is logged once until a declaration lands again.
   */
  async redeclare(): Promise<void> {
    for (const declaration of this.declarations.values()) {
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
    await Promise.all(
      [...this.declarations.keys()].map((name) => this.storeOf(name).withdrawDeclaration(0, this.declarer.id)),
    );
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
    const index = await this.connection.scripts.call((client) => client.hgetall(this.indexKey()));
    const listed = await Promise.all(
      Object.entries(index).map(async ([name, label]) => {
        const store = this.storeOf(name);
        const [repeat, declared] = await Promise.all([store.repeatInfo(0, name), store.declarations(0)]);
        if (repeat === null) return undefined;
        const { cron, tz, everyMs, missed, nextRunAt, lastRunAt, lastOutcome, lastSuccessAt } = repeat;
        const info: RecurringScheduleInfo = {
          name,
          declaredBy: label,
          handled: this.names.has(name),
          ...(cron !== undefined && { cron }),
          ...(tz !== undefined && { tz }),
          ...(everyMs !== undefined && { everyMs }),
          missed,
          nextRunAt,
          ...(lastRunAt !== undefined && { lastRunAt }),
          ...(lastOutcome !== undefined && { lastOutcome }),
          ...(lastSuccessAt !== undefined && { lastSuccessAt }),
          declarations: this.decodeDeclarations(declared, repeat),
        };
        return info;
      }),
    );
    return listed.filter((info) => info !== undefined).sort((a, b) => a.name.localeCompare(b.name));
  }

  /** The declarations hash (see recurring-declare.lua), the definition in effect first, then newest first. */
  private decodeDeclarations(fields: Record<string, string>, inEffect: RepeatInfo): RecurringDeclarationInfo[] {
    const now = this.connection.clock.estimate();
    const live = new Set<string>();
    for (const [field, value] of Object.entries(fields)) {
      if (!field.startsWith('p:')) continue;
      const at = value.indexOf('|');
      if (Number(value.slice(0, at)) >= now) live.add(value.slice(at + 1));
    }
    const declarations: RecurringDeclarationInfo[] = [];
    for (const [field, value] of Object.entries(fields)) {
      if (!field.startsWith('d:')) continue;
      const text = field.slice(2);
      const [firstDeclaredAt, , ...by] = value.split('|');
      const { cron, tz, everyMs, missed } = RepeatSchedule.parse(text);
      declarations.push({
        ...(cron !== undefined && { cron }),
        ...(tz !== undefined && { tz }),
        ...(everyMs !== undefined && { everyMs }),
        missed,
        declaredBy: by.join('|'),
        firstDeclaredAt: Number(firstDeclaredAt),
        live: live.has(text),
        inEffect:
          cron === inEffect.cron && tz === inEffect.tz && everyMs === inEffect.everyMs && missed === inEffect.missed,
      });
    }
    return declarations.sort(
      (a, b) => Number(b.inEffect) - Number(a.inEffect) || b.firstDeclaredAt - a.firstDeclaredAt,
    );
  }

  /**
   * Deletes a schedule no process of this one declares (a `@Recurring` removed from the code): its
   * occurrence, its queue's keys and its entry in the list. True when it was listed. Refused while this
   * process declares it; other processes still declaring it declare it again within seconds.
   */
  async remove(name: string): Promise<boolean> {
    assertName(name, 'name');
    const label = this.names.get(name);
    if (label !== undefined) throw stillDeclared(name, label);
    const removed = await this.connection.scripts.call((client) => client.hdel(this.indexKey(), name));
    const store = this.storeOf(name);
    await store.obliterate(0);
    await deleteQueueMeta(this.connection, store.keys);
    return removed === 1;
  }

  private indexKey(): string {
    return QueueKeys.recurringIndex(this.settings.prefix);
  }

  /**
   * The store of a schedule's queue: this process' own when it runs the schedule, else one over the
   * same keys (a schedule that only another process, or none any more, declares).
   */
  private storeOf(name: string): DelayQueueStore {
    const queueName = RECURRING_QUEUE_PREFIX + name;
    if (this.registry.has('delay', queueName)) return this.registry.get<DelayQueue>('delay', queueName).store;
    const options = resolveOptions(DelayQueueOptionsRules, recurringQueueOptions(name), `@Recurring "${name}"`);
    return new DelayQueueStore(this.connection.scripts, new QueueKeys(this.settings.prefix, queueName, 1), options);
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
