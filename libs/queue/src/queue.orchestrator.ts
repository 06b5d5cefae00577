import { BeforeApplicationShutdown, Injectable, Logger, OnApplicationBootstrap, OnModuleInit } from '@nestjs/common';
import { ConsumerFactory, bound } from './consumer.factory';
import { ConsumerRegistry, type Consumer } from './consumer/consumer.registry';
import { eventQueueKind, QUEUE_EVENT_NAMES, QueueEvents } from './events/queue-events';
import { periodWithoutSource, unknownEvent } from './queue.messages';
import { DelayQueue } from './delay-queue/delay-queue';
import { QueueRegistry } from './queue.registry';
import { QueueExplorer, type DiscoveredHandlers } from './queue.explorer';
import { QueueSettings } from './queue.settings';
import { RedisConnection } from './redis/redis-connection';
import { RecurringMounter, type RecurringEntry } from './recurring/recurring-mounter';
import { resolveRecurring } from './recurring/recurring-options';
import { DeclaredState } from './declared-state';
import { QueueProcesses } from './queue-processes';
import { RepeatSchedule } from './delay-queue/repeat-schedule';
import { raceTimeout, TIMED_OUT, waitOrTimeout } from './utils/timers';

/**
 * Mounts what QueueExplorer found, and owns the library's lifecycle: event handlers are subscribed at
 * module init; once the application is bootstrapped, consumers are built (their options checked; each
 * schedule, `@Recurring` or a task source's periodic pass, mounted by RecurringMounter), then, in this
 * order, queues' records are kept (DeclaredState), the schedules declared, and the consumers started.
 * Shutdown goes in reverse before the connection closes: consumers stop claiming (each waiting up to
 * `shutdownTimeoutMs` for its handlers, then giving back what they did not finish), the schedules are
 * withdrawn, DeclaredState stops.
 */
@Injectable()
export class QueueOrchestrator implements OnModuleInit, OnApplicationBootstrap, BeforeApplicationShutdown {
  private readonly logger = new Logger('QueueModule');
  /** What discovery found, mounted once the application is bootstrapped. */
  private found: Omit<DiscoveredHandlers, 'eventHandlers'> = {
    batchConsumers: [],
    delayConsumers: [],
    recurring: [],
    taskSources: [],
  };
  private readonly started: Consumer[] = [];
  /** What discovery refused, thrown once every module is initialised. */
  private refused: unknown;

  constructor(
    private readonly explorer: QueueExplorer,
    private readonly factory: ConsumerFactory,
    private readonly consumers: ConsumerRegistry,
    private readonly events: QueueEvents,
    private readonly settings: QueueSettings,
    private readonly connection: RedisConnection,
    private readonly schedules: RecurringMounter,
    private readonly registry: QueueRegistry,
    private readonly declaredState: DeclaredState,
    private readonly processes: QueueProcesses,
  ) {}

  onModuleInit(): void {
    try {
      const { eventHandlers, ...found } = this.explorer.explore();
      this.found = found;
      for (const handler of eventHandlers) this.listen(handler);
    } catch (error) {
      // Thrown at bootstrap: the connection's own start-up (PING) runs beside this hook, and closing it
      // now would be reported as Redis being unreachable.
      this.refused = error;
    }
  }

  async onApplicationBootstrap(): Promise<void> {
    try {
      if (this.refused !== undefined) throw this.refused;
      // Every consumer is built first: a misconfigured one fails start-up before any claims work.
      const built: (Consumer | undefined)[] = [];
      const { delayConsumers, batchConsumers, recurring } = this.found;
      for (const found of delayConsumers) built.push(await this.factory.delayConsumer(found));
      for (const found of batchConsumers) built.push(await this.factory.batchConsumer(found));
      for (const { instance, method, label, metadata } of recurring) {
        const plan = await resolveRecurring(metadata, label, (raw, where) => this.factory.decoratorOptions(raw, where));
        built.push(this.schedules.mount({ ...plan, label, run: bound(instance, method) }));
      }
      for (const entry of this.taskSources()) built.push(this.schedules.mount(entry));
      // Before anything is written: a process beside one it cannot work with refuses to start.
      await this.processes.start();
      this.declaredState.start();
      await this.schedules.start();
      if (!this.settings.consumers) return;
      for (const consumer of built) {
        if (!consumer) continue;
        this.consumers.add(consumer);
        this.started.push(consumer);
        await consumer.start();
      }
    } catch (error) {
      // A failed start-up is often not followed by `app.close()` (a test whose `init()` rejected, a
      // bootstrap that exits): what it opened is closed here, or it would keep the process alive.
      await this.beforeApplicationShutdown();
      await this.connection.abandon();
      throw error;
    }
  }

  async beforeApplicationShutdown(): Promise<void> {
    // One budget for the whole shutdown (RedisConnection closes by the same deadline): handlers get
    // `shutdownTimeoutMs`, handing back their unfinished work and withdrawing the schedules share
    // `commandTimeoutMs` more, whatever state Redis is in. A hand-back cut short is dropped with the
    // connection (its lease returns it); a withdrawal cut short expires by itself (DECLARER_ALIVE_MS).
    const timeout = this.settings.shutdownTimeoutMs;
    const closeBy = Date.now() + timeout + this.settings.commandTimeoutMs;
    await this.stopConsumers(timeout, closeBy);
    const withdrawn = this.schedules.withdraw().catch(() => undefined);
    await waitOrTimeout(withdrawn, Math.max(0, closeBy - Date.now()));
    this.declaredState.stop();
    await waitOrTimeout(this.processes.stop(), Math.max(0, closeBy - Date.now()));
  }

  private async stopConsumers(timeout: number, closeBy: number): Promise<void> {
    const consumers = this.started.splice(0);
    const stopped = await raceTimeout(
      Promise.all(consumers.map((consumer) => consumer.stop(timeout))),
      closeBy - Date.now(),
    );
    consumers.forEach((consumer, i) => {
      this.consumers.delete(consumer);
      if (stopped === TIMED_OUT || !stopped[i])
        this.logger.warn(
          `${consumer.label}: handler(s) still running after ${timeout} ms (shutdownTimeoutMs) were abandoned`,
        );
    });
  }

  /**
   * Gives each DelayQueue its `@TaskSource` (a pass owed since its record was created starts), and the
   * schedule that runs it every `reconcile.everyMs` / `cron`, once across every process.
   */
  private taskSources(): RecurringEntry[] {
    const entries: RecurringEntry[] = [];
    for (const { instance, method, label, metadata } of this.found.taskSources) {
      const queue = this.factory.queueOf('delay', metadata.queue);
      // Replaced by a test's provider override: nothing to reconcile.
      if (!(queue instanceof DelayQueue)) continue;
      queue.reconciler.attach({ label, list: bound(instance, method) });
      const { everyMs, cron } = queue.options.reconcile ?? {};
      if (everyMs === undefined && cron === undefined) continue;
      entries.push({
        name: `reconcile.${queue.name}`,
        label: `@TaskSource ${label}`,
        schedule: new RepeatSchedule(everyMs !== undefined ? { everyMs } : { cron: cron! }),
        run: () => queue.reconciler.run({}, 'schedule'),
      });
    }
    const sourced = new Set(this.found.taskSources.map(({ metadata }) => metadata.queue));
    for (const { kind, name, queue } of this.registry.all()) {
      if (kind !== 'delay' || sourced.has(name)) continue;
      const { everyMs, cron } = queue.options.reconcile ?? {};
      if (everyMs !== undefined || cron !== undefined) this.logger.warn(periodWithoutSource(name));
    }
    return entries;
  }

  private listen({ instance, method, label, metadata: { event, queue } }: DiscoveredHandlers['eventHandlers'][number]) {
    if (!QUEUE_EVENT_NAMES.includes(event))
      throw unknownEvent(`@OnQueueEvent on ${label}: `, String(event), QUEUE_EVENT_NAMES);
    // A listener filtering on a queue that does not exist would never be called: say so at start-up.
    const kind = eventQueueKind(event);
    if (queue !== undefined && kind) this.factory.queueOf(kind, queue);
    this.events.on(event, bound(instance, method), { queue });
  }
}
