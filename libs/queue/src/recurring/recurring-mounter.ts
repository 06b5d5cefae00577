import { Injectable, Logger } from '@nestjs/common';
import { randomUUID } from 'node:crypto';
import { hostname } from 'node:os';
import { ConsumerFactory } from '../consumer.factory';
import type { Consumer } from '../consumer/consumer.registry';
import { QueueConnectionError } from '../errors';
import { QueueEvents } from '../events/queue-events';
import type { DelayContext, DelayQueueOptions, RecurringContext } from '../interfaces';
import { RECURRING_QUEUE_PREFIX } from '../queue.constants';
import { QueueRegistry } from '../queue.registry';
import { QueueSettings } from '../queue.settings';
import { RedisConnection } from '../redis/redis-connection';
import { describeError } from '../utils/errors';
import { OneAtATime } from '../utils/one-at-a-time';
import { MAX_HANDLER_TIMEOUT_MS } from '../validation/consumer-options';
import { DECLARE_EVERY_MS, RecurringDeclaration } from './recurring-declaration';
import type { RecurringPlan } from './recurring-options';
import { RecurringStore } from './recurring.store';
import { nameTaken } from './recurring.messages';

/**
 * One schedule to mount, whoever asks for it (a `@Recurring` method, a queue's periodic reconcile): its
 * name, its `every | cron` schedule and what runs at each tick, with who declares it (`label`).
 */
export interface RecurringEntry extends RecurringPlan {
  label: string;
  run: (ctx: RecurringContext) => unknown;
}

/**
 * The one owner of this process' schedules, as nestjs/schedule's orchestrator owns its jobs: it builds
 * each (its own one-shard queue, its declaration, the consumer of that queue running `run` once per
 * tick), declares them at start-up, declares them again every few seconds and whenever the connection
 * is ready again (a restarted server), and withdraws them at shutdown. QueueOrchestrator calls it.
 */
@Injectable()
export class RecurringMounter {
  private readonly declarations = new Map<string, RecurringDeclaration>();
  /** This process among those declaring schedules: pids repeat across containers, hence the random part. */
  private readonly declarer = {
    id: `${hostname()}:${process.pid}:${randomUUID().slice(0, 8)}`,
    where: `${hostname()} pid ${process.pid}`,
  };
  private readonly store: RecurringStore;
  private readonly logger = new Logger('QueueModule');
  private timer?: NodeJS.Timeout;
  /** Set at shutdown: a round still running declares nothing more. */
  private withdrawn = false;
  // A round owed when the one before it ends may come after the withdrawal: it declares nothing then.
  private readonly rounds = new OneAtATime(() => this.redeclare());
  /** A round in flight may have read Redis before it restarted: the schedules are declared again once it ends. */
  private readonly reconnected = () => {
    if (!this.withdrawn) this.rounds.again();
  };

  constructor(
    private readonly registry: QueueRegistry,
    private readonly connection: RedisConnection,
    private readonly settings: QueueSettings,
    private readonly events: QueueEvents,
    private readonly consumers: ConsumerFactory,
  ) {
    this.store = new RecurringStore(connection.scripts, settings.prefix);
  }

  /**
   * Builds a schedule: its queue (made through the registry), its declaration (declared by `start`), and
   * the consumer of its queue, which runs `run` for each occurrence (started by QueueOrchestrator).
   * Refused when another schedule of this process took its name.
   */
  mount(entry: RecurringEntry): Consumer {
    const { name, label, schedule, maxAttempts, backoff, handlerTimeoutMs, run } = entry;
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
    const { store, connection, declarer, events } = this;
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
    // No deadline unless asked for: a run past one would only have its signal aborted (the schedule
    // stays held until it ends), and a recurring job's length is its own business.
    const options = { concurrency: 1, handlerTimeoutMs: handlerTimeoutMs ?? MAX_HANDLER_TIMEOUT_MS };
    return this.consumers.delayQueueConsumer(queue, label, options, (_payload: unknown, ctx: DelayContext) =>
      run({
        name,
        occurrence: ctx.repeat?.occurrence ?? ctx.runAt,
        firedAt: ctx.firedAt,
        attempt: ctx.attempt,
        // Read when the run asks for it: the signal's AbortController is made on first read, which most
        // runs never need (a day of 1 s ticks on a test's clock made 86,400 of them).
        get signal() {
          return ctx.signal;
        },
      }),
    );
  }

  /**
   * Records the schedules' queues (made here, not by Nest, as a registered queue's record is at its
   * init) and declares each schedule; from then on declares them again every few seconds and on every
   * reconnection. With `startup: 'continue'` a Redis that does not answer does not stop the application:
   * a schedule is declared by a later round once it does.
   */
  async start(): Promise<void> {
    for (const { queue } of this.declarations.values()) await queue.record.assert();
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
    if (this.withdrawn || this.declarations.size === 0) return;
    this.timer = setInterval(() => this.rounds.run(), DECLARE_EVERY_MS).unref();
    this.connection.client.on('ready', this.reconnected);
  }

  /**
   * Declares every schedule of this process again: it renews this process' declarations, places a
   * schedule Redis lost, and follows the schedule in effect. A failure is logged once until a
   * declaration lands again.
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
   * alive takes effect at once rather than when this one's declarations expire. A round in flight is not
   * waited for: with Redis frozen it could outlast the shutdown budget; one that lands after this leaves
   * a declaration that expires by itself (DECLARER_ALIVE_MS).
   */
  async withdraw(): Promise<void> {
    this.withdrawn = true;
    clearInterval(this.timer);
    this.connection.client.off('ready', this.reconnected);
    const sent = [...this.declarations.values()].filter(({ landed, failing }) => landed || failing);
    await Promise.all(sent.map((declaration) => declaration.withdraw()));
  }

  /** The schedules this process declares, by name. */
  mounted(): ReadonlyMap<string, RecurringDeclaration> {
    return this.declarations;
  }
}

/**
 * A schedule's own one-shard queue `recurring.<name>`, so that its retries and lease are its own and it
 * shows on the dashboard, in metrics and in health like any queue. Its lease is short, so that a run
 * whose process died is taken over (and the schedule goes on) within two seconds; a run that lives
 * longer keeps it by the consumer's heartbeat.
 */
export function recurringQueueOptions(name: string): DelayQueueOptions {
  return { name: RECURRING_QUEUE_PREFIX + name, shards: 1, leaseMs: 2000 };
}
