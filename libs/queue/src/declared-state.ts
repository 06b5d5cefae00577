import { Injectable, Logger } from '@nestjs/common';
import { QueueEvents } from './events/queue-events';
import { QueueRegistry } from './queue.registry';
import { DECLARE_EVERY_MS } from './recurring/recurring-declaration';
import { RecurringSchedules } from './recurring/recurring-schedules';
import { dataLost } from './delay-queue/task-source.messages';
import { RedisConnection } from './redis/redis-connection';
import { QueueConfigError } from './errors';

/**
 * Queues' records (kind, shards) are checked every this many rounds (15 s), and at once on a
 * reconnection: one HEXISTS per queue, which an idle consumer's budget (about one command a second, its
 * polls included) affords. A record found missing is how a queue's data loss is seen (FLUSHALL drops no
 * connection): this is the bound on seeing one without a reconnection.
 */
const QUEUE_RECORDS_EVERY = 5;

/**
 * What this process declares in Redis at start-up — its `@Recurring` schedules and its queues' records
 * — declared again by itself when Redis lost it, checked every few seconds and whenever the connection
 * is ready again (a restarted server). A restore is logged (a warning) and emitted as
 * `state.redeclared`, which QueueMetricsModule counts. Started and stopped by QueueOrchestrator.
 */
@Injectable()
export class DeclaredState {
  private readonly logger = new Logger('QueueModule');
  private timer?: NodeJS.Timeout;
  private round = 0;
  private running?: Promise<void>;
  private stopped = false;
  private readonly reconnected = () => void this.check(true);

  constructor(
    private readonly connection: RedisConnection,
    private readonly registry: QueueRegistry,
    private readonly recurring: RecurringSchedules,
    private readonly events: QueueEvents,
  ) {}

  start(): void {
    this.timer = setInterval(() => void this.check(this.round % QUEUE_RECORDS_EVERY === 0), DECLARE_EVERY_MS);
    this.timer.unref();
    this.connection.client.on('ready', this.reconnected);
  }

  /**
   * Not waiting for a round in flight: with Redis frozen it could outlast the shutdown budget. One that
   * lands after the schedules' withdrawal leaves a declaration that expires by itself (DECLARER_ALIVE_MS).
   */
  stop(): void {
    this.stopped = true;
    clearInterval(this.timer);
    this.connection.client.off('ready', this.reconnected);
  }

  /** One round; a round still running (Redis slow) is not doubled. */
  private check(queueRecords: boolean): Promise<void> {
    if (this.stopped || this.running) return this.running ?? Promise.resolve();
    this.round += 1;
    this.running = this.declare(queueRecords).finally(() => (this.running = undefined));
    return this.running;
  }

  private async declare(queueRecords: boolean): Promise<void> {
    await this.recurring.redeclare();
    // Says which queues a live process has a source for, and runs a pass owed that pub/sub missed.
    for (const entry of this.registry.all()) if (entry.kind === 'delay') await entry.queue.reconciler.heartbeat();
    if (!queueRecords) return;
    for (const { kind, name, queue } of this.registry.all()) {
      try {
        const found = await queue.record.restore();
        if (found === 'present') continue;
        if (found === 'lost' && queue.record.reportsLoss) {
          const restoring = kind === 'delay' && queue.reconciler.sourceLabel !== undefined;
          this.logger.error(dataLost(name, kind, restoring));
          if (this.events.has('queue.data-lost')) this.events.emit('queue.data-lost', { queue: name, kind, restoring });
        } else
          this.logger.warn(
            `Queue "${name}": its record (kind, shards) was missing in Redis (its data was lost, or the queue was obliterated); recorded it again`,
          );
        if (this.events.has('state.redeclared'))
          this.events.emit('state.redeclared', { queue: name, what: 'queue', name });
      } catch (error) {
        // Redis away: the next round tries again (RedisConnection logs the outage).
        if (error instanceof QueueConfigError) this.logger.error(error.message);
      }
    }
  }
}
