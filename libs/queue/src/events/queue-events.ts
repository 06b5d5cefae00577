import { Injectable, Logger } from '@nestjs/common';
import { listenerNotFunction, unknownEvent } from '../queue.messages';
import { errorDetail } from '../utils/errors';
import type {
  QueueEventListener,
  QueueEventListenerOptions,
  QueueEventMap,
  QueueEventName,
  QueueKind,
} from '../interfaces';

/**
 * Every event and the kind of queue that emits it (`both`: consumers of either kind). The compiler
 * holds this table to QueueEventMap: an event added there and forgotten here does not compile.
 */
const EVENT_KINDS = {
  'messages.pushed': 'fixed',
  'messages.dropped': 'fixed',
  'messages.expired': 'fixed',
  'batch.completed': 'fixed',
  'batch.failed': 'fixed',
  'tasks.scheduled': 'delay',
  'task.fired': 'delay',
  'task.completed': 'delay',
  'task.failed': 'delay',
  'task.dead': 'delay',
  'consumer.error': 'both',
  'handler.timeout': 'both',
  'queue.paused': 'both',
  'queue.resumed': 'both',
  'group.paused': 'fixed',
  'group.resumed': 'fixed',
  'state.redeclared': 'both',
  'queue.data-lost': 'both',
  'queue.reconciled': 'delay',
  'processes.contract-changed': 'both',
} as const satisfies Record<QueueEventName, QueueKind | 'both'>;

/** Every event name, to refuse a misspelt one when a listener is added rather than never calling it. */
export const QUEUE_EVENT_NAMES = Object.keys(EVENT_KINDS) as readonly QueueEventName[];

/** The kind of queue whose instances emit `event`; undefined when queues of both kinds do. */
export function eventQueueKind(event: QueueEventName): QueueKind | undefined {
  const kind = EVENT_KINDS[event];
  return kind === 'both' ? undefined : kind;
}

interface Subscription {
  listener: (payload: QueueEventMap[QueueEventName]) => unknown;
  queue?: string;
}

/**
 * What the queues of this application do, as typed events: `events.on('task.dead', listener)`, or
 * `@OnQueueEvent('task.dead')` on a provider method. Listeners are called synchronously where the
 * event happens (keep them short, or hand the work on); one that throws or rejects is logged and never
 * disturbs a producer or a consumer. Events tell what this process did: each process emits its own.
 */
@Injectable()
export class QueueEvents {
  private readonly logger = new Logger('QueueEvents');
  /** Only events someone listens to have an entry, so "nobody listens" is one lookup on the hot path. */
  private readonly subscriptions = new Map<QueueEventName, Subscription[]>();

  /** Calls `listener` with each `event` (of `options.queue` only, when given). Returns the function that stops it. */
  on<E extends QueueEventName>(
    event: E,
    listener: QueueEventListener<E>,
    options: QueueEventListenerOptions = {},
  ): () => void {
    if (!QUEUE_EVENT_NAMES.includes(event)) throw unknownEvent('', String(event), QUEUE_EVENT_NAMES);
    if (typeof listener !== 'function') throw listenerNotFunction(event);
    // Sound: subscriptions are kept per event, so a listener only ever receives its own event's payload.
    const subscription: Subscription = { listener: listener as Subscription['listener'], queue: options.queue };
    // Copy on write: an emit under way goes on over the listeners it started with.
    this.subscriptions.set(event, [...(this.subscriptions.get(event) ?? []), subscription]);
    return () => {
      const rest = (this.subscriptions.get(event) ?? []).filter((entry) => entry !== subscription);
      if (rest.length > 0) this.subscriptions.set(event, rest);
      else this.subscriptions.delete(event);
    };
  }

  /** @internal Emitters ask this before building a payload, so an event nobody listens to costs nothing. */
  has(event: QueueEventName): boolean {
    return this.subscriptions.has(event);
  }

  /** @internal */
  emit<E extends QueueEventName>(event: E, payload: QueueEventMap[E]): void {
    const subscriptions = this.subscriptions.get(event);
    if (subscriptions === undefined) return;
    for (const { listener, queue } of subscriptions) {
      if (queue !== undefined && queue !== payload.queue) continue;
      try {
        const result = listener(payload);
        if (result instanceof Promise) result.catch((error: unknown) => this.failed(event, error));
      } catch (error) {
        this.failed(event, error);
      }
    }
  }

  private failed(event: QueueEventName, error: unknown): void {
    this.logger.error(`A listener of "${event}" threw: ${errorDetail(error)}`);
  }
}
