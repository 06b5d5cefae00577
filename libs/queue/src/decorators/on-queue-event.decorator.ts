import { QUEUE_EVENT_METADATA } from '../queue.constants';
import type { QueueEventListenerOptions, QueueEventName } from '../interfaces';

export interface QueueEventHandlerMetadata {
  event: QueueEventName;
  queue?: string;
}

/**
 * Calls the provider method with each `event` of the queues (of `options.queue` only, when given):
 * `@OnQueueEvent('task.dead') onDead(event: TaskDeadEvent) {}`. Stack it to listen to several events.
 * A method that throws is logged; it never disturbs the queues.
 */
export const OnQueueEvent =
  (event: QueueEventName, options: QueueEventListenerOptions = {}): MethodDecorator =>
  (_target, _key, descriptor) => {
    const handlers: QueueEventHandlerMetadata[] =
      Reflect.getMetadata(QUEUE_EVENT_METADATA, descriptor.value as object) ?? [];
    Reflect.defineMetadata(
      QUEUE_EVENT_METADATA,
      [...handlers, { event, queue: options.queue }],
      descriptor.value as object,
    );
    return descriptor;
  };
