import { Injectable } from '@nestjs/common';
import { setTimeout as delay } from 'node:timers/promises';
import { ConsumerRegistry } from './consumer/consumer.registry';
import { memoryInstanceOf } from './testing/memory/memory-instances';
import type { MemoryRedis } from './testing/memory/memory-redis';
import type { SortedSet } from './testing/memory/sorted-set';
import { advanceNeedsMemory, advanceStalled, badAdvance } from './testing/memory/memory.messages';
import { RedisConnection } from './redis/redis-connection';

/** Options of `QueueClock.advance`. */
export interface AdvanceOptions {
  /**
   * How long (real time) to wait at each step for this process' handlers to settle before the clock
   * moves on; then `advance` rejects, naming them. Default 30 s.
   */
  settleTimeoutMs?: number;
}

/** Event-loop turns without a command and without a running handler that mean the work of a step is done. */
const QUIET_TURNS = 4;
/** ...lasting at least this long: a poll armed for "now" waits for a timer of 1 ms. */
const QUIET_MS = 5;
/** Wake-ups of a step at most while what fell due in it stays untaken. */
const WAKE_ROUNDS = 3;

/**
 * The queues' clock: Redis' `TIME` on a server, the instance's clock on `memory://`. With `memory://`
 * the clock stands still until a test moves it with `advance`, which is how a test sees four hours
 * pass in milliseconds.
 */
@Injectable()
export class QueueClock {
  /** @internal Made by Nest (QueueModule), not by the application. */
  constructor(
    private readonly connection: RedisConnection,
    private readonly consumers: ConsumerRegistry,
  ) {}

  /** The queues' time now, epoch ms, read from Redis (`TIME`): what decides what is due. */
  async now(): Promise<number> {
    const memory = memoryInstanceOf(this.connection.client);
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
    const memory = memoryInstanceOf(this.connection.client);
    return memory ? memory.clock.now() : this.connection.clock.estimate();
  }

  /** @internal Whether the queues run on `memory://`, on a clock `advance` moves (the testing helpers ask). */
  get onMemory(): boolean {
    return memoryInstanceOf(this.connection.client) !== undefined;
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
   * advanced. On a Redis server it rejects with a QueueError.
   */
  async advance(ms: number, options: AdvanceOptions = {}): Promise<void> {
    if (typeof ms !== 'number' || !Number.isSafeInteger(ms) || ms < 0) throw badAdvance(ms);
    const memory = memoryInstanceOf(this.connection.client);
    if (!memory) throw advanceNeedsMemory();
    const settleTimeoutMs = options.settleTimeoutMs ?? 30_000;
    await this.settle(memory, settleTimeoutMs);
    const target = memory.clock.now() + ms;
    for (;;) {
      const now = memory.clock.now();
      const next = Math.min(nextDueAfter(memory, now), target);
      const falling = fallingDue(memory, now, next);
      // Moving the clock re-arms every sleeping poller (the connection's clock follows this one): those
      // whose work fell due poll now, the others go on sleeping, with no timer.
      if (next > now) memory.clock.advance(next - now);
      for (let round = 0; ; round++) {
        await this.settle(memory, settleTimeoutMs);
        if (!falling.some(({ set, member, score }) => set.score(member) === score)) break;
        // Still where it was: a poll that the move did not reach (one under way, a scheduled consumer
        // that only drains on its ticks). Every consumer polls now, a few times: a paused queue's work stays.
        if (round === WAKE_ROUNDS) break;
        this.connection.wakeConsumers();
      }
      if (next >= target) return;
    }
  }

  /**
   * Waits until the queues' work is done for now: no handler of this process runs, no poll or outcome
   * is on its way, no call waits for its reply, and no command has run for a few turns of the event
   * loop. Bounded as a whole by `timeoutMs` (real time), then it rejects naming the handlers still
   * running, or else what kept the queues busy.
   */
  private async settle(memory: MemoryRedis, timeoutMs: number): Promise<void> {
    const started = Date.now();
    let seen = memory.commandsRun;
    let quiet = 0;
    let quietSince = Date.now();
    while (quiet < QUIET_TURNS || Date.now() - quietSince < QUIET_MS) {
      const activities = this.consumers.activities();
      const handlers = activities.filter(({ handlers }) => handlers > 0);
      const working = activities.some(({ working }) => working) || this.waitingForReplies();
      if (Date.now() - started > timeoutMs) {
        throw advanceStalled(
          Date.now() - started,
          handlers.map(({ consumer, handlers }) => `${consumer} (${handlers} running)`),
        );
      }
      // A handler may wait on real time (a database, a timer): no need to spin meanwhile.
      if (handlers.length > 0) await delay(1);
      else await new Promise<void>((resolve) => setImmediate(resolve));
      if (memory.commandsRun !== seen || handlers.length > 0 || working) {
        seen = memory.commandsRun;
        quiet = 0;
        quietSince = Date.now();
      } else {
        quiet++;
      }
    }
  }

  /** Whether the command connection has calls sent or about to be sent that have not been answered. */
  private waitingForReplies(): boolean {
    const client = this.connection.client as unknown as {
      commandQueue?: { length: number };
      offlineQueue?: { length: number };
      autoPipelineQueueSize?: number;
    };
    return (
      (client.commandQueue?.length ?? 0) > 0 ||
      (client.offlineQueue?.length ?? 0) > 0 ||
      (client.autoPipelineQueueSize ?? 0) > 0
    );
  }
}

/** Entries whose score falls in (from, to]: what a step of the clock makes due. */
function fallingDue(
  memory: MemoryRedis,
  from: number,
  to: number,
): { set: SortedSet; member: string; score: number }[] {
  const falling: { set: SortedSet; member: string; score: number }[] = [];
  for (const set of memory.keys.sortedSets()) {
    for (const { member, score } of set.slice(set.firstAtOrAbove(from, true), set.pastAtOrBelow(to, false) - 1)) {
      falling.push({ set, member, score });
    }
  }
  return falling;
}

/** The earliest score after `now` in any sorted set: the next time something may fall due. */
function nextDueAfter(memory: MemoryRedis, now: number): number {
  let next = Infinity;
  for (const set of memory.keys.sortedSets()) {
    const entries = set.entries();
    const first = entries[set.firstAtOrAbove(now, true)];
    if (first && first.score < next) next = first.score;
  }
  return next;
}
