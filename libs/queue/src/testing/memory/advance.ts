import { setTimeout as delay } from 'node:timers/promises';
import type { AdvanceContext } from '../../redis/memory-backend';
import { advanceStalled, manyOccurrences } from '../../queue-clock.messages';
import type { MemoryRedis } from './memory-redis';
import type { SortedSet } from './sorted-set';

/**
 * Event-loop turns without a command, a running handler, a poll (or a wake-up for one) or an outcome
 * on its way, that mean the work of a step is done. Each step pays them, so they are few: what the
 * library does between a reply and its next call is tracked (activities), and these are for what is
 * not, such as a test's own listener that waits a turn before it calls.
 */
const QUIET_TURNS = 2;
/** How long a handler runs before the wait for it goes from event-loop turns to 1 ms timers. */
const SPIN_MS = 2;
/** Wake-ups of a step at most while what fell due in it stays untaken. */
const WAKE_ROUNDS = 3;
/**
 * Occurrences (entries falling due, each handled in turn) past which one `advance` says that it runs
 * many: docs/testing.md quotes the number. A second of a test's time handles about a thousand.
 */
export const MANY_OCCURRENCES = 1000;

/**
 * `QueueClock.advance` on a memory instance: moves its clock `ms` ahead, stepping through each due
 * time on the way as time would, waking the consumers at each, and resolves once everything that
 * fell due by then has been handled. The clock never moves while a handler of this process runs, so
 * no lease lapses because a test advanced.
 */
export async function advanceMemory(
  memory: MemoryRedis,
  ms: number,
  context: AdvanceContext,
  settleTimeoutMs: number,
): Promise<void> {
  await settle(memory, context, settleTimeoutMs);
  const target = memory.clock.now() + ms;
  let occurrences = 0;
  for (;;) {
    const now = memory.clock.now();
    const next = Math.min(nextDueAfter(memory, now), target);
    const falling = fallingDue(memory, now, next);
    const before = occurrences;
    occurrences += falling.length;
    if (before <= MANY_OCCURRENCES && occurrences > MANY_OCCURRENCES) {
      context.warn(manyOccurrences(ms, occurrences, MANY_OCCURRENCES, target - next));
    }
    // Moving the clock re-arms every sleeping poller (the connection's clock follows this one): those
    // whose work fell due poll now, the others go on sleeping, with no timer.
    if (next > now) memory.clock.advance(next - now);
    for (let round = 0; ; round++) {
      await settle(memory, context, settleTimeoutMs);
      if (!falling.some(({ set, member, score }) => set.score(member) === score)) break;
      // Still where it was: a poll that the move did not reach (one under way, a scheduled consumer
      // that only drains on its ticks). Every consumer polls now, a few times: a paused queue's work stays.
      if (round === WAKE_ROUNDS) break;
      context.wakeConsumers();
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
async function settle(memory: MemoryRedis, context: AdvanceContext, timeoutMs: number): Promise<void> {
  const started = Date.now();
  let seen = memory.commandsRun;
  let quiet = 0;
  let handlersSince: number | undefined;
  while (quiet < QUIET_TURNS) {
    const activities = context.activities();
    const handlers = activities.filter(({ handlers }) => handlers > 0);
    const working = activities.some(({ working }) => working) || context.waitingForReplies();
    if (Date.now() - started > timeoutMs) {
      throw advanceStalled(
        Date.now() - started,
        handlers.map(({ consumer, handlers }) => `${consumer} (${handlers} running)`),
      );
    }
    // Most handlers of a test settle within a few turns; one that waits on real time (a database, a
    // timer) is waited for with timers, not spun for.
    handlersSince = handlers.length > 0 ? (handlersSince ?? Date.now()) : undefined;
    if (handlersSince !== undefined && Date.now() - handlersSince > SPIN_MS) await delay(1);
    else await new Promise<void>((resolve) => setImmediate(resolve));
    if (memory.commandsRun !== seen || handlers.length > 0 || working) {
      seen = memory.commandsRun;
      quiet = 0;
    } else {
      quiet++;
    }
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
