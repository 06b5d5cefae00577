import { Injectable } from '@nestjs/common';
import { isDeepStrictEqual } from 'node:util';
import { duplicateQueue, queueKindConflict, unknownQueue, wrongKind } from './queue.messages';
import { ConsumerRegistry } from './consumer/consumer.registry';
import { DelayQueue, type DelayQueueInternals } from './delay-queue/delay-queue';
import { DelayQueueStore } from './delay-queue/delay-queue.store';
import { QueueEvents } from './events/queue-events';
import { FixedQueue } from './fixed-queue/fixed-queue';
import type { DelayQueueOptions, FixedQueueOptions, QueueKind } from './interfaces';
import { QueueSettings } from './queue.settings';
import { QueueKeys } from './redis/keys';
import { RedisConnection } from './redis/redis-connection';
import { resolveOptions } from './validation/apply-rules';
import { DelayQueueOptionsRules } from './validation/delay-queue-options';

export type RegisteredQueue =
  { kind: 'fixed'; name: string; queue: FixedQueue } | { kind: 'delay'; name: string; queue: DelayQueue };

interface Entry {
  kind: QueueKind;
  options: unknown;
  queue: unknown;
  /** The modules that registered it, for a conflict's message. */
  registeredIn?: () => string;
}

/**
 * Every queue registered in the application, by name: the one place queues are made (by
 * `registerFixedQueue` / `registerDelayQueue`, and by `@Recurring` for its own), and where consumers,
 * health, metrics and the dashboard find them.
 */
@Injectable()
export class QueueRegistry {
  private readonly queues = new Map<string, Entry>();

  /** @internal Made by Nest (QueueModule), not by the application. */
  constructor(
    private readonly connection: RedisConnection,
    private readonly settings: QueueSettings,
    private readonly events: QueueEvents,
    private readonly consumers: ConsumerRegistry,
  ) {}

  /** The FixedQueue of that name, made on its first registration (see `register`). */
  fixedQueue(options: FixedQueueOptions, registeredIn?: () => string): FixedQueue {
    return this.register('fixed', options, (...made) => new FixedQueue(options, ...made), registeredIn);
  }

  /**
   * The DelayQueue of that name, made on its first registration (see `register`); `internal` says how a
   * queue the library makes for itself differs (a `@Recurring` schedule's).
   */
  delayQueue(options: DelayQueueOptions, registeredIn?: () => string, internal?: DelayQueueInternals): DelayQueue {
    return this.register('delay', options, (...made) => new DelayQueue(options, ...made, internal), registeredIn);
  }

  /**
   * A store over the keys of a DelayQueue this process does not run (a `@Recurring` schedule's that
   * another process declares, or none any more): for reading and deleting them, never for consuming.
   */
  delayQueueStore(options: DelayQueueOptions, where: string): DelayQueueStore {
    const resolved = resolveOptions(DelayQueueOptionsRules, options, where);
    const keys = new QueueKeys(this.settings.prefix, resolved.name, resolved.shards);
    return new DelayQueueStore(this.connection.scripts, keys, resolved);
  }

  /**
   * Returns the queue of that name, creating it on first registration from what every queue is made
   * with. Several modules may register the same queue (with equal options) and share one instance;
   * other options under the name are refused.
   */
  private register<Q>(
    kind: QueueKind,
    options: { name: string } | undefined,
    create: (...made: [RedisConnection, QueueSettings, QueueEvents, ConsumerRegistry]) => Q,
    registeredIn?: () => string,
  ): Q {
    const name = options?.name as string;
    const existing = this.queues.get(name);
    if (existing) {
      if (existing.kind !== kind) throw queueKindConflict(name, existing.kind, kind);
      if (!isDeepStrictEqual(existing.options, options)) {
        const where = (entry?: () => string) => entry?.() ?? 'a module';
        throw duplicateQueue(name, existing.options, options, where(existing.registeredIn), where(registeredIn));
      }
      return existing.queue as Q;
    }
    const queue = create(this.connection, this.settings, this.events, this.consumers);
    this.queues.set(name, { kind, options, queue, registeredIn });
    return queue;
  }

  /** Every registered queue, in the order they were registered. */
  all(): RegisteredQueue[] {
    return [...this.queues].map(([name, { kind, queue }]) => ({ kind, name, queue }) as RegisteredQueue);
  }

  has(kind: QueueKind, name: string): boolean {
    return this.queues.get(name)?.kind === kind;
  }

  get<Q>(kind: QueueKind, name: string): Q {
    const entry = this.queues.get(name);
    if (entry && entry.kind !== kind) throw wrongKind(name, entry.kind, kind);
    if (!entry) {
      const known = [...this.queues].filter(([, e]) => e.kind === kind).map(([n]) => n);
      throw unknownQueue(kind, name, known);
    }
    return entry.queue as Q;
  }
}
