import { Injectable, Logger } from '@nestjs/common';
import { randomUUID } from 'node:crypto';
import { hostname } from 'node:os';
import { bound, ConsumerFactory } from '../consumer/consumer.factory';
import { ConsumerRegistry } from '../consumer/consumer.registry';
import { DelayQueue } from '../delay-queue/delay-queue';
import type { DelayConsumerWorker } from '../delay-queue/delay-consumer.worker';
import { QueueConfigError, QueueConnectionError, QueueInputError } from '../errors';
import { describeError } from '../utils/errors';
import { DECLARE_EVERY_MS, RecurringDeclaration } from './recurring-declaration';
import { decodeRepeatEntry } from '../redis/lua/repeat-entry';
import { RepeatSchedule } from '../delay-queue/repeat-schedule';
import { QueueKeys } from '../redis/keys';
import { assertName } from '../validation/payload';
import { QueueEvents } from '../events/queue-events';
import type {
  DelayContext,
  DelayQueueOptions,
  RecurringContext,
  RecurringDeclarationInfo,
  RecurringOptions,
  RecurringScheduleInfo,
} from '../interfaces';
import { RECURRING_QUEUE_PREFIX } from '../queue.constants';
import type { FoundMethod } from '../queue.explorer';
import { QueueRegistry } from '../queue.registry';
import { QueueSettings } from '../queue.settings';
import { RedisConnection } from '../redis/redis-connection';
import { MAX_HANDLER_TIMEOUT_MS } from '../validation/queue-options';
import { resolveRecurring } from './recurring-options';

/**
 * Lease of a run: short, so that a run whose process died is taken over (and the schedule goes on)
 * within two seconds; a run that lives longer keeps it by the consumer's heartbeat.
 */
const RECURRING_LEASE_MS = 2000;

/**
 * The `@Recurring` schedules: it mounts each method on a DelayQueue repeat (the repeat `<name>` of its
 * own one-shard queue `recurring.<name>`, so its retries and lease are its own, and it shows on the
 * dashboard, in metrics and in health like any queue), and lists them all, with those that no process
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
    private readonly consumers: ConsumerRegistry,
  ) {}

  /** @internal Declares the schedule of a `@Recurring` method and builds its consumer (QueueOrchestrator). */
  async mount(found: FoundMethod<RecurringOptions>): Promise<DelayConsumerWorker | undefined> {
    const { instance, method, label, metadata } = found;
    const where = `@Recurring on ${label}`;
    const plan = await resolveRecurring(metadata, label, (raw, at) => this.factory.decoratorOptions(raw, at));
    const { name, every, tz, missed, handlerTimeoutMs, maxAttempts, backoff } = plan;
    const other = this.names.get(name);
    if (other !== undefined)
      throw new QueueConfigError(`${where}: the name "${name}" is already used by @Recurring on ${other}`);
    this.names.set(name, label);
    const queueName = RECURRING_QUEUE_PREFIX + name;
    const options: DelayQueueOptions = {
      name: queueName,
      shards: 1,
      visibilityTimeoutMs: RECURRING_LEASE_MS,
      ...(maxAttempts !== undefined && { maxAttempts }),
      ...(backoff !== undefined && { backoff }),
    };
    let schedule: RepeatSchedule;
    try {
      assertName(name, 'name');
      schedule = new RepeatSchedule(every, {
        ...(tz !== undefined && { tz }),
        ...(missed !== undefined && { missed }),
      });
    } catch (error) {
      // A schedule refused as input is a mistake in the decorator.
      if (error instanceof QueueInputError) throw new QueueConfigError(`${where}: ${error.message}`, { cause: error });
      throw error;
    }
    const queue = this.registry.register(
      'delay',
      queueName,
      options,
      () => new DelayQueue(options, this.connection, this.settings, this.events, this.consumers),
    );
    await queue.onModuleInit();
    const declaration = new RecurringDeclaration(name, label, schedule, queue, this.declarer, this.events, () =>
      // The index `list()` reads: a schedule whose method is gone stays listed until removed.
      this.connection.scripts.call((client) => client.hset(this.indexKey(), name, label)),
    );
    this.declarations.set(name, declaration);
    await this.declareFirst(declaration);
    const run = bound(instance, method);
    const handler = {
      run: (_payload: unknown, ctx: DelayContext) =>
        run({
          name,
          occurrence: ctx.repeat?.occurrence ?? ctx.runAt,
          firedAt: ctx.firedAt,
          attempt: ctx.attempt,
          signal: ctx.signal,
        } satisfies RecurringContext),
    };
    return this.factory.delayConsumer({
      instance: handler,
      method: 'run',
      label,
      metadata: {
        queue: queueName,
        // No deadline unless asked for: a run past one would only have its signal aborted (the schedule
        // stays held until it ends), and a recurring job's length is its own business.
        options: { concurrency: 1, handlerTimeoutMs: handlerTimeoutMs ?? MAX_HANDLER_TIMEOUT_MS },
      },
    });
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
      [...this.declarations.keys()].map((name) =>
        this.connection.scripts.call((client) =>
          client.hdel(this.keysOf(name).key(0, 'declarations'), `p:${this.declarer.id}`),
        ),
      ),
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
        const keys = this.keysOf(name);
        const [stored, declared] = await Promise.all([
          this.connection.scripts.call((client) => client.hget(keys.key(0, 'repeats'), name)),
          this.connection.scripts.call((client) => client.hgetall(keys.key(0, 'declarations'))),
        ]);
        if (stored === null) return undefined;
        const { occurrence, lastRunAt, lastOutcome, lastSuccessAt, schedule } = decodeRepeatEntry(stored);
        const { cron, tz, everyMs, missed } = RepeatSchedule.parse(schedule);
        const info: RecurringScheduleInfo = {
          name,
          declaredBy: label,
          handled: this.names.has(name),
          ...(cron !== undefined && { cron }),
          ...(tz !== undefined && { tz }),
          ...(everyMs !== undefined && { everyMs }),
          missed,
          nextRunAt: occurrence,
          ...(lastRunAt !== undefined && { lastRunAt }),
          ...(lastOutcome !== undefined && { lastOutcome }),
          ...(lastSuccessAt !== undefined && { lastSuccessAt }),
          declarations: this.decodeDeclarations(declared, schedule),
        };
        return info;
      }),
    );
    return listed.filter((info) => info !== undefined).sort((a, b) => a.name.localeCompare(b.name));
  }

  /** The declarations hash (see recurring-declare.lua), the definition in effect first, then newest first. */
  private decodeDeclarations(fields: Record<string, string>, inEffect: string): RecurringDeclarationInfo[] {
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
        inEffect: text === inEffect,
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
    if (label !== undefined)
      throw new QueueInputError(`"${name}" is still declared by @Recurring on ${label}: remove the decorator first`);
    const keys = this.keysOf(name);
    const shard = ['due', 'active', 'data', 'dead', 'stats', 'errors', 'runs', 'repeats', 'declarations'] as const;
    const removed = await this.connection.scripts.call((client) => client.hdel(this.indexKey(), name));
    await this.connection.scripts.call((client) => client.unlink(...shard.map((kind) => keys.key(0, kind))));
    await this.connection.scripts.call((client) => client.unlink(keys.meta));
    return removed === 1;
  }

  private indexKey(): string {
    return `${this.settings.prefix}:{recurring}:schedules`;
  }

  private keysOf(name: string): QueueKeys {
    return new QueueKeys(this.settings.prefix, RECURRING_QUEUE_PREFIX + name, 1);
  }
}
