import { Injectable } from '@nestjs/common';
import { UnknownQueueError } from './errors';
import { QueueRegistry } from './queue.registry';
import { unknownQueueName } from './queue.messages';

/** What a consumer of this process offers to be held back. */
export interface Holdable {
  hold(): void;
  release(): void;
}

/**
 * Holds back this process' consumers of a queue, and only this process' (to drain one instance before
 * a deploy, say): `pauseConsumers('game-events')`. Handlers under way finish; held consumers send
 * nothing to Redis until `resumeConsumers`. Queue-wide pauses are the queues' own `pause()`.
 */
@Injectable()
export class QueueConsumers {
  private readonly workers = new Map<string, Holdable[]>();
  private readonly paused = new Set<string>();

  constructor(private readonly registry: QueueRegistry) {}

  /** Stops this process' consumers of `queue` from claiming (those started later too). */
  pauseConsumers(queue: string): void {
    this.assertQueue(queue);
    this.paused.add(queue);
    for (const worker of this.workers.get(queue) ?? []) worker.hold();
  }

  resumeConsumers(queue: string): void {
    this.assertQueue(queue);
    this.paused.delete(queue);
    for (const worker of this.workers.get(queue) ?? []) worker.release();
  }

  /** Whether `pauseConsumers(queue)` holds this process' consumers of it. */
  consumersPaused(queue: string): boolean {
    this.assertQueue(queue);
    return this.paused.has(queue);
  }

  /** @internal A consumer about to start (QueueOrchestrator). */
  attach(queue: string, worker: Holdable): void {
    this.workers.set(queue, [...(this.workers.get(queue) ?? []), worker]);
    if (this.paused.has(queue)) worker.hold();
  }

  private assertQueue(queue: string): void {
    const known = this.registry.all().map((entry) => entry.name);
    if (!known.includes(queue)) throw new UnknownQueueError(unknownQueueName(queue, known));
  }
}
