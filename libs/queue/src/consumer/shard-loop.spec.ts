import { ServerClock } from '../redis/server-clock';
import type { PollResult } from './shard-loop';
import { ShardLoop } from './shard-loop';

/** A shard whose polls answer with the next due time the test sets, the server clock being the local one. */
function shard(onHintsOnly = false, idlePollMs = 1000) {
  const polls: number[] = [];
  /** `dueNowPolls`: that many polls more find work due now (a drain), then `nextDueIn` applies. */
  const state = { nextDueIn: Infinity, dueNowPolls: 0 };
  const poll = async (): Promise<PollResult> => {
    const now = Date.now();
    polls.push(now);
    if (state.dueNowPolls > 0) {
      state.dueNowPolls--;
      return { serverNow: now, nextDueAt: now };
    }
    return { serverNow: now, nextDueAt: now + state.nextDueIn };
  };
  const loop = new ShardLoop(poll, new ServerClock(), idlePollMs, () => undefined, onHintsOnly);
  return { loop, polls, state };
}

describe('ShardLoop', () => {
  beforeEach(() => jest.useFakeTimers({ now: 1_000_000 }));
  afterEach(() => jest.useRealTimers());

  it('polls at once, then when its work falls due, at most idlePollMs apart', async () => {
    const { loop, polls, state } = shard();
    state.nextDueIn = 300;
    loop.start();
    await jest.advanceTimersByTimeAsync(0);
    expect(polls).toEqual([1_000_000]);
    await jest.advanceTimersByTimeAsync(300);
    expect(polls).toEqual([1_000_000, 1_000_300]);
    state.nextDueIn = Infinity;
    await jest.advanceTimersByTimeAsync(300 + 1000);
    expect(polls.slice(2)).toEqual([1_000_600, 1_001_600]);
    await loop.stop();
  });

  it('is woken early by a hint of work due sooner, and not by one due later', async () => {
    const { loop, polls } = shard();
    loop.start();
    await jest.advanceTimersByTimeAsync(0);
    loop.hint(Date.now() + 5000);
    await jest.advanceTimersByTimeAsync(100);
    expect(polls).toHaveLength(1);
    loop.hint(Date.now() + 50);
    await jest.advanceTimersByTimeAsync(50);
    expect(polls).toEqual([1_000_000, 1_000_150]);
    await loop.stop();
  });

  it('onHintsOnly: starts asleep, polls after a hint while work is due now, and never for work due later', async () => {
    const { loop, polls, state } = shard(true, Infinity);
    loop.start();
    await jest.advanceTimersByTimeAsync(60_000);
    expect(polls).toEqual([]);

    // Three polls find work due now; the fourth only work due in 500 ms, left for the next hint.
    state.dueNowPolls = 3;
    state.nextDueIn = 500;
    loop.hint(-Infinity);
    await jest.advanceTimersByTimeAsync(60_000);
    expect(polls).toHaveLength(4);
    expect(jest.getTimerCount()).toBe(0);
    loop.hint(-Infinity);
    await jest.advanceTimersByTimeAsync(0);
    expect(polls).toHaveLength(5);
    await loop.stop();
  });

  it('stops with no timer left, asleep or not', async () => {
    const { loop } = shard();
    loop.start();
    await jest.advanceTimersByTimeAsync(0);
    await loop.stop();
    expect(jest.getTimerCount()).toBe(0);
  });
});
