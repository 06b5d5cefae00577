import { Injectable } from '@nestjs/common';
import { bound, ConsumerFactory } from '../consumer/consumer.factory';
import { ConsumerRegistry } from '../consumer/consumer.registry';
import { DelayQueue } from '../delay-queue/delay-queue';
import type { DelayConsumerWorker } from '../delay-queue/delay-consumer.worker';
import { QueueConfigError, QueueInputError } from '../errors';
import { QueueEvents } from '../events/queue-events';
import type { DelayContext, DelayQueueOptions, RecurringContext, RecurringOptions } from '../interfaces';
import { RECURRING_QUEUE_PREFIX } from '../queue.constants';
import type { FoundMethod } from '../queue.explorer';
import { QueueRegistry } from '../queue.registry';
import { QueueSettings } from '../queue.settings';
import { RedisConnection } from '../redis/redis-connection';
import { unknownOption } from '../validation/option-violations';

/**
 * Lease of a run: short, so that a run whose process died is taken over (and the schedule goes on)
 * within two seconds; a run that lives longer keeps it by the consumer's heartbeat.
 */
const RECURRING_LEASE_MS = 2000;
const OPTION_KEYS = ['cron', 'everyMs', 'name', 'tz', 'missed', 'handlerTimeoutMs', 'maxAttempts', 'backoff'];

/**
 * Mounts `@Recurring` methods on DelayQueue repeats: each method's schedule is the repeat `<name>` of
 * its own one-shard queue `recurring.<name>` (so its retries and lease are its own, and it shows on the
 * dashboard, in metrics and in health like any queue). Every replica declares it at start, which
 * changes nothing unless the schedule did.
 */
@Injectable()
export class RecurringJobs {
  private readonly names = new Map<string, string>();

  constructor(
    private readonly registry: QueueRegistry,
    private readonly connection: RedisConnection,
    private readonly settings: QueueSettings,
    private readonly events: QueueEvents,
    private readonly factory: ConsumerFactory,
    private readonly consumers: ConsumerRegistry,
  ) {}

  /** Declares the schedule of a `@Recurring` method and builds its consumer. */
  async mount(found: FoundMethod<RecurringOptions>): Promise<DelayConsumerWorker | undefined> {
    const { instance, method, label, metadata } = found;
    const where = `@Recurring on ${label}`;
    if (metadata === null || typeof metadata !== 'object')
      throw new QueueConfigError(`${where}: expected options { cron } or { everyMs }, got ${String(metadata)}`);
    for (const key of Object.keys(metadata))
      if (!OPTION_KEYS.includes(key)) throw new QueueConfigError(`${where}: ${unknownOption(key, OPTION_KEYS)}`);
    const { name = label, cron, everyMs, tz, missed, handlerTimeoutMs, maxAttempts, backoff } = metadata;
    if (typeof name !== 'string') throw new QueueConfigError(`${where}: name must be a string, got ${typeof name}`);
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
    const queue = this.registry.register(
      'delay',
      queueName,
      options,
      () => new DelayQueue(options, this.connection, this.settings, this.events, this.consumers),
    );
    await queue.onModuleInit();
    try {
      await queue.repeat(name, cron !== undefined ? { cron } : { everyMs: everyMs! }, undefined, {
        ...(tz !== undefined && { tz }),
        ...(missed !== undefined && { missed }),
      });
    } catch (error) {
      // A schedule refused as input is a mistake in the decorator.
      if (error instanceof QueueInputError) throw new QueueConfigError(`${where}: ${error.message}`, { cause: error });
      throw error;
    }
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
        options: { concurrency: 1, ...(handlerTimeoutMs !== undefined && { handlerTimeoutMs }) },
      },
    });
  }
}
