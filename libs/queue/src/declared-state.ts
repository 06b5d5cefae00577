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
  private ticks = 0;
  private stopped = false;
  // A round owed when the one before it ends may come after stop(): it declares nothing then.
  private readonly schedules = new OneAtATime(async () => {
    if (this.stopped) return;
    await this.recurring.redeclare();
    // Says which queues a live process has a source for, and runs a pass owed that pub/sub missed.
    for (const entry of this.registry.all()) if (entry.kind === 'delay') await entry.queue.reconciler.heartbeat();
  });
  private readonly records = new OneAtATime(async () => {
    if (!this.stopped) await this.checkRecords();
  });
  /**
   * A round in flight may have read Redis before it restarted, or be one that skips the records: the
   * schedules are declared again once it ends, and the records are checked now, beside any check in
   * flight (the record's script creates it once, so two checks report a loss once).
   */
  private readonly reconnected = () => {
    if (this.stopped) return;
    this.schedules.again();
    void this.checkRecords();
  };

  constructor(
    private readonly connection: RedisConnection,
    private readonly registry: QueueRegistry,
    private readonly recurring: RecurringSchedules,
    private readonly events: QueueEvents,
  ) {}

  start(): void {
    this.timer = setInterval(() => {
      if (this.stopped) return;
      this.schedules.run();
      if (this.ticks++ % QUEUE_RECORDS_EVERY === 0) this.records.run();
    }, DECLARE_EVERY_MS);
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

  private async checkRecords(): Promise<void> {
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

/**
 * Rounds of one kind, one at a time: a round asked for while one runs (Redis slow) is not doubled. A
 * round handles its own failures (Redis away: the next round tries again), so it never rejects.
 */
class OneAtATime {
  private running = false;
  private owed = false;

  constructor(private readonly round: () => Promise<void>) {}

  run(): void {
    if (this.running) return;
    this.running = true;
    void this.round().finally(() => {
      this.running = false;
      if (!this.owed) return;
      this.owed = false;
      this.run();
    });
  }

  /** A round now, or as soon as the one in flight ends. */
  again(): void {
    if (this.running) this.owed = true;
    else this.run();
  }
}
