import type { ConsumerRegistry } from './consumer/consumer.registry';
import type { QueueEvents } from './events/queue-events';
import type { QueueKind } from './interfaces';
import type { PauseFlag } from './redis/pause-flag';
import type { QueueRecord } from './redis/queue-meta';

/** What QueueControls reads of a queue: its public name and shards, its store and record (internal). */
export interface ControlledQueue {
  readonly name: string;
  readonly options: { readonly shards: number };
  readonly store: { obliterate(shard: number): Promise<void> };
  readonly record: QueueRecord;
}

/**
 * The calls every kind of queue answers alike: its queue-wide pause (a flag in Redis), the data loss
 * its record saw, and obliterate. Each queue keeps them on its own surface (their texts say what they
 * mean for that kind) and answers them here.
 */
export class QueueControls {
  constructor(
    private readonly kind: QueueKind,
    private readonly queue: ControlledQueue,
    private readonly pauseFlag: PauseFlag,
    private readonly events: QueueEvents,
    private readonly consumers: ConsumerRegistry,
    /** Sends the writes made before the call, which it then deletes too. */
    private readonly flush: () => void,
  ) {}

  /** Deletes every key of the queue, its record last; `force`: even while its consumers run here. */
  async obliterate(force: boolean): Promise<void> {
    const { kind, queue } = this;
    this.consumers.assertObliterable(kind, queue.name, force);
    this.flush();
    await Promise.all(Array.from({ length: queue.options.shards }, (_, shard) => queue.store.obliterate(shard)));
    await queue.record.delete();
  }

  acknowledgeDataLoss(): Promise<boolean> {
    return this.queue.record.acknowledgeLoss();
  }

  async pause(): Promise<void> {
    await this.pauseFlag.switch(true);
    if (this.events.has('queue.paused')) this.events.emit('queue.paused', { queue: this.queue.name, kind: this.kind });
  }

  async resume(): Promise<void> {
    await this.pauseFlag.switch(false);
    if (this.events.has('queue.resumed'))
      this.events.emit('queue.resumed', { queue: this.queue.name, kind: this.kind });
  }

  isPaused(): Promise<boolean> {
    return this.pauseFlag.read();
  }
}
