import { Injectable, Logger } from '@nestjs/common';
import { QueueEvents } from './events/queue-events';
import { QueueRegistry } from './queue.registry';
import { dataLost } from './delay-queue/task-source.messages';
import { RedisConnection } from './redis/redis-connection';
import { QueueConfigError } from './errors';
import { OneAtATime } from './utils/one-at-a-time';

/** The rounds' pace: the first check comes this long after start-up. */
const ROUND_MS = 3000;
/**
 * Queues' records (kind, shards) are checked every this many rounds (15 s), and at once on a
 * reconnection: one HEXISTS per queue, which an idle consumer's budget (about one command a second, its
 * polls included) affords. A record found missing is how a queue's data loss is seen (FLUSHALL drops no
 * connection): this is the bound on seeing one without a reconnection.
 */
const QUEUE_RECORDS_EVERY = 5;

/**
 * Its queues' records, which this process writes in Redis at start-up, written again by itself when
 * Redis lost them, checked every 15 s and whenever the connection is ready again (a restarted
 * server). A restore is logged (a warning) and emitted as `state.redeclared`, which QueueMetricsModule
 * counts; a loss is reported. Started and stopped by QueueOrchestrator. (RecurringMounter keeps the
 * schedules declared the same way.)
 */
@Injectable()
export class DeclaredState {
  private readonly logger = new Logger('QueueModule');
  private timer?: NodeJS.Timeout;
  private ticks = 0;
  private stopped = false;
  private readonly records = new OneAtATime(async () => {
    if (!this.stopped) await this.checkRecords();
  });
  /**
   * A round in flight may have read Redis before it restarted: the records are checked now, beside it
   * (the record's script creates it once, so two checks report a loss once).
   */
  private readonly reconnected = () => {
    if (!this.stopped) void this.checkRecords();
  };

  constructor(
    private readonly connection: RedisConnection,
    private readonly registry: QueueRegistry,
    private readonly events: QueueEvents,
  ) {}

  start(): void {
    this.timer = setInterval(() => {
      if (this.ticks++ % QUEUE_RECORDS_EVERY === 0) this.records.run();
    }, ROUND_MS);
    this.timer.unref();
    this.connection.client.on('ready', this.reconnected);
  }

  /** Not waiting for a round in flight: with Redis frozen it could outlast the shutdown budget. */
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
