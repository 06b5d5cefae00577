import { Injectable } from '@nestjs/common';
import { isDeepStrictEqual } from 'node:util';
import { QueueConfigError, UnknownQueueError } from './errors';
import { duplicateQueue, queueKindConflict, unknownQueue, wrongKind } from './queue.messages';
import type { DelayQueue } from './delay-queue/delay-queue';
import type { FixedQueue } from './fixed-queue/fixed-queue';
import type { QueueKind } from './interfaces';

export type RegisteredQueue =
  { kind: 'fixed'; name: string; queue: FixedQueue } | { kind: 'delay'; name: string; queue: DelayQueue };

interface Entry {
  kind: QueueKind;
  options: unknown;
  queue: unknown;
  /** The modules that registered it, for a conflict's message. */
  registeredIn?: () => string;
}

/** Every queue registered in the application, by name; consumers find their queue here. */
@Injectable()
export class QueueRegistry {
  private readonly queues = new Map<string, Entry>();

  /**
   * Returns the queue of that name, creating it on first registration. Several modules may register
   * the same queue (with equal options) and share one instance; other options under the name are refused.
   */
  register<Q>(kind: QueueKind, name: string, options: unknown, create: () => Q, registeredIn?: () => string): Q {
    const existing = this.queues.get(name);
    if (existing) {
      if (existing.kind !== kind) throw new QueueConfigError(queueKindConflict(name, existing.kind, kind));
      if (!isDeepStrictEqual(existing.options, options)) {
        const where = (entry?: () => string) => entry?.() ?? 'a module';
        throw new QueueConfigError(
          duplicateQueue(name, existing.options, options, where(existing.registeredIn), where(registeredIn)),
        );
      }
      return existing.queue as Q;
    }
    const queue = create();
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
    if (entry && entry.kind !== kind) throw new UnknownQueueError(wrongKind(name, entry.kind, kind));
    if (!entry) {
      const known = [...this.queues].filter(([, e]) => e.kind === kind).map(([n]) => n);
      throw new UnknownQueueError(unknownQueue(kind, name, known));
    }
    return entry.queue as Q;
  }
}
