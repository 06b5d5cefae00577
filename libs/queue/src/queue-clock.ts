import { Injectable } from '@nestjs/common';
import { setTimeout as delay } from 'node:timers/promises';
import { ConsumerRegistry } from './consumer/consumer.registry';
import { memoryInstanceOf } from './memory/memory-instances';
import type { MemoryRedis } from './memory/memory-redis';
import type { SortedSet } from './memory/sorted-set';
import { advanceNeedsMemory, advanceStalled, badAdvance } from './memory/memory.messages';
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

  /** The queues' time now, epoch ms: what decides what is due. */
  async now(): Promise<number> {
    const memory = memoryInstanceOf(this.connection.client);
    if (memory) return memory.clock.now();
    const [seconds, micros] = await this.connection.scripts.call((client) => client.time());
    return Number(seconds) * 1000 + Math.floor(Number(micros) / 1000);
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
      if (next > now) memory.clock.advance(next - now);
      // What fell due and is still where it was was not taken yet: its poller had not woken (a poll
      // under way as the clock moved). Woken again, a few times: a paused queue's work stays there.
      for (let round = 0; round < WAKE_ROUNDS; round++) {
        this.wake(memory);
        await this.settle(memory, settleTimeoutMs);
        if (!falling.some(({ set, member, score }) => set.score(member) === score)) break;
      }
      if (next >= target) return;
    }
  }

  /** The estimate jumps (sleeping pollers re-arm their timers against it), and every consumer polls now. */
  private wake(memory: MemoryRedis): void {
    this.connection.clock.observe(memory.clock.now(), Date.now());
    this.connection.wakeConsumers();
  }

  /** Waits until no command has run for a while and no handler of this process runs. */
  private async settle(memory: MemoryRedis, timeoutMs: number): Promise<void> {
    const started = Date.now();
    let seen = memory.commandsRun;
    let quiet = 0;
    let quietSince = Date.now();
    while (quiet < QUIET_TURNS || Date.now() - quietSince < QUIET_MS) {
      const running = this.running();
      const waiting = this.waitingForReplies();
      if (running.length > 0) {
        if (Date.now() - started > timeoutMs) throw advanceStalled(Date.now() - started, running);
        await delay(1);
      } else {
        await new Promise<void>((resolve) => setImmediate(resolve));
      }
      // A poll answered before the clock moved sets the estimate back to the old time (its reply is
      // recent, so trusted), and its poller would sleep for real hours: set it right, wake them again.
      const stale = this.connection.clock.estimate() < memory.clock.now();
      if (stale) this.wake(memory);
      if (memory.commandsRun !== seen || running.length > 0 || waiting || stale) {
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
      autoPipelineQueueSize?: number;
    };
    return (client.commandQueue?.length ?? 0) > 0 || (client.autoPipelineQueueSize ?? 0) > 0;
  }

  /** Consumers with handlers under way or past their timeout (still holding their work). */
  private running(): string[] {
    return this.consumers
      .statuses()
      .filter(({ inFlight, overdue }) => inFlight > 0 || overdue.length > 0)
      .map(({ consumer, inFlight }) => `${consumer} (${inFlight} running)`);
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
