import { Injectable } from '@nestjs/common';
import { ConsumerRegistry } from './consumer/consumer.registry';
import { QueueRegistry } from './queue.registry';
import { unknownQueueName } from './queue.messages';

/**
 * Holds back this process' consumers of a queue, and only this process' (to drain one instance before
 * a deploy, say): `pauseConsumers('game-events')`. Handlers under way finish; held consumers send
 * nothing to Redis until `resumeConsumers`. Queue-wide pauses are the queues' own `pause()`.
 */
@Injectable()
export class QueueConsumers {
  /** @internal Made by Nest (QueueModule), not by the application. */
  constructor(
    private readonly registry: QueueRegistry,
    private readonly consumers: ConsumerRegistry,
  ) {}

  /** Stops this process' consumers of `queue` from claiming (those started later too). */
  pauseConsumers(queue: string): void {
    this.assertQueue(queue);
    this.consumers.hold(queue);
  }

  resumeConsumers(queue: string): void {
    this.assertQueue(queue);
    this.consumers.release(queue);
  }

  /** Whether `pauseConsumers(queue)` holds this process' consumers of it. */
  consumersPaused(queue: string): boolean {
    this.assertQueue(queue);
    return this.consumers.isHeld(queue);
  }

  private assertQueue(queue: string): void {
    const known = this.registry.all().map((entry) => entry.name);
    if (!known.includes(queue)) throw unknownQueueName(queue, known);
  }
}
