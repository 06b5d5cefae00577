import { Injectable } from '@nestjs/common';
import { ModuleRef } from '@nestjs/core';
import { describeError } from '../utils/errors';
import { deadline } from '../utils/timers';
import { loadOptional } from '../optional-dependency';
import { ConsumerStatusRegistry } from '../consumer-status.registry';
import { QueueRegistry } from '../queue.registry';
import { HEALTH_DEFAULTS } from '../queue.defaults';
import { QueueSettings } from '../queue.settings';
import { RedisConnection } from '../redis/redis-connection';
import type {
  DelayQueueStats,
  FixedQueueStats,
  QueueHealthDetails,
  QueueHealthOptions,
  QueueHealthResult,
} from '../interfaces';
import { QueueInputError, UnknownQueueError } from '../errors';

/** The part of terminus' HealthIndicatorService (≥ 11) this uses. */
interface HealthIndicators {
  check(key: string): { up(data: object): unknown; down(data: object): unknown };
}

type Terminus = { HealthIndicatorService: new () => HealthIndicators };

/**
 * A health indicator for @nestjs/terminus (an optional dependency, loaded on the first check): up when
 * Redis answers PING in time, this process' consumers are running, and each queue's backlog and lag
 * are within the limits given; down with the reason otherwise.
 *
 * ```ts
 * @Get('health') @HealthCheck()
 * check() { return this.health.check([() => this.queues.isHealthy('queues', { maxLagMs: 30_000 })]); }
 * ```
 */
@Injectable()
export class QueueHealthIndicator {
  private indicators?: HealthIndicators;

  constructor(
    private readonly connection: RedisConnection,
    private readonly registry: QueueRegistry,
    private readonly consumerStatus: ConsumerStatusRegistry,
    private readonly settings: QueueSettings,
    private readonly moduleRef: ModuleRef,
  ) {}

  async isHealthy<Key extends string>(key: Key, options: QueueHealthOptions = {}): Promise<QueueHealthResult<Key>> {
    const indicator = this.terminus().check(key);
    const queues = this.select(options.queues);
    const timeoutMs = options.timeoutMs ?? HEALTH_DEFAULTS.timeoutMs;
    if (!Number.isFinite(timeoutMs) || timeoutMs <= 0)
      throw new QueueInputError(`isHealthy: timeoutMs must be a positive number of ms, got ${timeoutMs}`);
    const down = (data: object) => indicator.down(data) as QueueHealthResult<Key>;

    let stats: (FixedQueueStats | DelayQueueStats)[];
    try {
      await deadline(this.connection.client.ping(), timeoutMs, `PING took longer than ${timeoutMs} ms`);
      stats = await deadline(
        Promise.all(queues.map(({ queue }) => queue.stats())),
        timeoutMs,
        `the queues' stats took longer than ${timeoutMs} ms`,
      );
    } catch (error) {
      return down({ redis: 'down', message: `Redis did not answer: ${describeError(error)}` });
    }

    const problems: string[] = [];
    const checked = new Set(queues.map(({ name }) => name));
    const consumers = this.consumerStatus.list().filter((consumer) => checked.has(consumer.queue));
    if (this.settings.consumers) {
      const stopped = consumers.filter((consumer) => !consumer.running).map((consumer) => consumer.consumer);
      if (stopped.length > 0) problems.push(`consumers not running: ${stopped.join(', ')}`);
    }
    const details: Record<string, QueueHealthDetails> = {};
    queues.forEach(({ kind, name }, i) => {
      const backlog = kind === 'fixed' ? (stats[i] as FixedQueueStats).pending : (stats[i] as DelayQueueStats).due;
      const { lagMs } = stats[i];
      details[name] = {
        kind,
        backlog,
        lagMs,
        consumers: consumers.filter((consumer) => consumer.queue === name && consumer.running).length,
      };
      if (options.maxBacklog !== undefined && backlog > options.maxBacklog)
        problems.push(`${name}: backlog ${backlog} > ${options.maxBacklog}`);
      if (options.maxLagMs !== undefined && lagMs > options.maxLagMs)
        problems.push(`${name}: lag ${lagMs} ms > ${options.maxLagMs} ms`);
    });
    if (problems.length > 0) return down({ redis: 'up', queues: details, message: problems.join('; ') });
    return indicator.up({ redis: 'up', queues: details }) as QueueHealthResult<Key>;
  }

  private select(names: string[] | undefined) {
    const all = this.registry.all();
    if (names === undefined) return all;
    return names.map((name) => {
      const found = all.find((entry) => entry.name === name);
      if (!found)
        throw new UnknownQueueError(
          `isHealthy: no queue named "${name}" is registered (registered: ${all.map((entry) => `"${entry.name}"`).join(', ')})`,
        );
      return found;
    });
  }

  /** terminus' own service when TerminusModule is imported; otherwise one of ours (it holds no state we rely on). */
  private terminus(): HealthIndicators {
    if (this.indicators) return this.indicators;
    const { HealthIndicatorService } = loadOptional<Terminus>('@nestjs/terminus', 'QueueHealthIndicator');
    try {
      this.indicators = this.moduleRef.get(HealthIndicatorService, { strict: false });
    } catch {
      this.indicators = new HealthIndicatorService();
    }
    return this.indicators;
  }
}
