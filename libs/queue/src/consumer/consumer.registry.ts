import { Injectable } from '@nestjs/common';
import type { QueueKind } from '../interfaces';
import { queueInUse } from '../queue.messages';
import type { ConsumerActivity, ConsumerRuntime, ConsumerStatus } from './consumer-runtime';

/** A consumer of this process, whatever its kind: what the registry asks of its runtime. */
export type Consumer = Pick<
  ConsumerRuntime<unknown, never>,
  'queue' | 'label' | 'start' | 'stop' | 'hold' | 'release' | 'status' | 'activity' | 'taskEnded'
>;

/**
 * The consumers of this process, from the moment they start until they have stopped: what shutdown
 * stops, what `pauseConsumers` holds back, what health checks report, and why `obliterate` refuses.
 */
@Injectable()
export class ConsumerRegistry {
  private readonly consumers = new Set<Consumer>();
  /** Queues whose consumers this process holds back, those started later too. */
  private readonly held = new Set<string>();

  add(consumer: Consumer): void {
    this.consumers.add(consumer);
    if (this.held.has(consumer.queue)) consumer.hold();
  }

  delete(consumer: Consumer): void {
    this.consumers.delete(consumer);
  }

  statuses(): ConsumerStatus[] {
    return [...this.consumers].map((consumer) => consumer.status());
  }

  activities(): ConsumerActivity[] {
    return [...this.consumers].map((consumer) => consumer.activity());
  }

  hold(queue: string): void {
    this.held.add(queue);
    for (const consumer of this.of(queue)) consumer.hold();
  }

  release(queue: string): void {
    this.held.delete(queue);
    for (const consumer of this.of(queue)) consumer.release();
  }

  isHeld(queue: string): boolean {
    return this.held.has(queue);
  }

  /** Other processes running the task see its lease lost at their next heartbeat (a third of the lease). */
  taskEnded(queue: string, id: string, reason: Error): void {
    for (const consumer of this.of(queue)) consumer.taskEnded(id, reason);
  }

  /** `obliterate` refuses while consumers of the queue run here, unless forced. */
  assertObliterable(kind: QueueKind, name: string, force: boolean): void {
    const running = this.of(name).map((consumer) => consumer.label);
    if (running.length > 0 && !force) throw queueInUse(kind, name, running);
  }

  private of(queue: string): Consumer[] {
    return [...this.consumers].filter((consumer) => consumer.queue === queue);
  }
}
