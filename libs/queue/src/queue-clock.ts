import { Injectable, Logger } from '@nestjs/common';
import { setTimeout as delay } from 'node:timers/promises';
import { ConsumerRegistry } from './consumer/consumer.registry';
import { memoryBackendOf, type AdvanceContext } from './redis/memory-backend';
import { advanceNeedsMemory, advanceStalled, badAdvance } from './queue-clock.messages';
import { RedisConnection } from './redis/redis-connection';

/** Options of `QueueClock.advance`. */
export interface AdvanceOptions {
  /**
   * How long (real time) to wait at each step for this process' handlers to settle before the clock
   * moves on; then `advance` rejects, naming them. Default 30 s.
   */
  settleTimeoutMs?: number;
}

/**
 * The queues' clock: Redis' `TIME` on a server, the instance's clock on `memory://`. With `memory://`
 * the clock stands still until a test moves it with `advance`, which is how a test sees four hours
 * pass in milliseconds.
 */
@Injectable()
export class QueueClock {
  private readonly logger = new Logger('QueueClock');

  /** @internal Made by Nest (QueueModule), not by the application. */
  constructor(
    private readonly connection: RedisConnection,
    private readonly consumers: ConsumerRegistry,
  ) {}

  /** The queues' time now, epoch ms, read from Redis (`TIME`): what decides what is due. */
  async now(): Promise<number> {
    const memory = memoryBackendOf(this.connection.client);
    if (memory) return memory.clock.now();
    const sentAt = Date.now();
    const [seconds, micros] = await this.connection.scripts.call((client) => client.time());
    const now = Number(seconds) * 1000 + Math.floor(Number(micros) / 1000);
    this.connection.clock.observe(now, sentAt);
    return now;
  }

  /**
   * The queues' time now, epoch ms, without a call: this machine's clock plus the last offset to
   * Redis' clock this process measured (every reply of the queues and consumers, and `now()`, feed it),
   * so it answers while Redis is down. Within a few ms of `now()` once Redis has answered, the
   * machine's own clock before; exact on `memory://`. For stamping rows that are compared with tasks'
   * times, where a call per row (or a failure while Redis is away) is not wanted.
   */
  nowSync(): number {
    const memory = memoryBackendOf(this.connection.client);
    return memory ? memory.clock.now() : this.connection.clock.estimate();
  }

  /** @internal Whether the queues run on `memory://`, on a clock `advance` moves (the testing helpers ask). */
  get onMemory(): boolean {
    return memoryBackendOf(this.connection.client) !== undefined;
  }

  /**
   * @internal On any backend: resolves once no handler of this process runs and no poll or outcome is
   * on its way, seen twice `everyMs` apart; rejects naming the handlers after `timeoutMs` (real time).
   */
  async idle(timeoutMs: number, everyMs = 5): Promise<void> {
    const started = Date.now();
    for (let quiet = 0; quiet < 2;) {
      const activities = this.consumers.activities();
      const handlers = activities.filter(({ handlers }) => handlers > 0);
      if (handlers.length === 0 && !activities.some(({ working }) => working)) quiet++;
      else quiet = 0;
      if (quiet < 2 && Date.now() - started > timeoutMs)
        throw advanceStalled(
          Date.now() - started,
          handlers.map(({ consumer, handlers }) => `${consumer} (${handlers} running)`),
        );
      if (quiet < 2) await delay(everyMs);
    }
  }

  /**
   * `memory://` only: moves the clock `ms` ahead and resolves once everything that fell due by then
   * has been handled (handlers settled, retries that fell due within the step run, recurring ticks
   * run). It steps through each due time on the way, as time would, waking the consumers at each;
   * the clock never moves while a handler of this process runs, so no lease lapses because a test
   * advanced. On a Redis server it rejects with a QueueError. The stepping is the memory engine's
   * (in `nestjs-redis-queues/testing`, loaded with the instance): this only hands it the process' view.
   */
  async advance(ms: number, options: AdvanceOptions = {}): Promise<void> {
    if (typeof ms !== 'number' || !Number.isSafeInteger(ms) || ms < 0) throw badAdvance(ms);
    const memory = memoryBackendOf(this.connection.client);
    if (!memory) throw advanceNeedsMemory();
    const context: AdvanceContext = {
      activities: () => this.consumers.activities(),
      waitingForReplies: () => this.waitingForReplies(),
      wakeConsumers: () => this.connection.wakeConsumers(),
      warn: (message) => this.logger.warn(message),
    };
    return memory.advance(ms, context, options.settleTimeoutMs ?? 30_000);
  }

  /** Whether the command connection has calls sent or about to be sent that have not been answered. */
  private waitingForReplies(): boolean {
    return this.connection.callsWaiting() > 0 || this.connection.client.autoPipelineQueueSize > 0;
  }
}
