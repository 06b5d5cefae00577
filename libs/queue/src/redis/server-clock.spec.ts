import { MemoryClock } from '../testing/memory/memory-clock';
import { ServerClock } from './server-clock';

describe('ServerClock', () => {
  let now: jest.SpyInstance<number, []>;
  beforeEach(() => {
    now = jest.spyOn(Date, 'now');
  });
  afterEach(() => now.mockRestore());

  it('keeps the tightest lower bound, so a reply that waited in a busy loop does not skew timers', () => {
    const clock = new ServerClock();
    now.mockReturnValue(1_000_100); // the reply was read 100 ms after the server answered
    clock.observe(1_000_000, 1_000_000);
    expect(clock.toLocal(2_000_000)).toBe(2_000_100);
    now.mockReturnValue(1_000_201); // a quick one: server and local clocks agree within 1 ms
    clock.observe(1_000_200, 1_000_200);
    expect(clock.toLocal(2_000_000)).toBe(2_000_001);
    now.mockReturnValue(1_000_400); // a slow one again: ignored
    clock.observe(1_000_300, 1_000_250);
    expect(clock.toLocal(2_000_000)).toBe(2_000_001);
  });

  it('follows a clock adjustment seen on a quick round trip, and tells the listeners', () => {
    const clock = new ServerClock();
    const changed = jest.fn();
    clock.onChange(changed);
    now.mockReturnValue(500);
    clock.observe(500, 500);
    now.mockReturnValue(1001);
    clock.observe(950, 1000); // the server is now 51 ms behind
    expect(clock.toLocal(950)).toBe(1001);
    expect(changed).toHaveBeenCalledTimes(1);
  });

  it("reads a memory instance's clock instead of estimating it: a still clock arms no timer for later work", () => {
    now.mockReturnValue(5_000);
    const memory = new MemoryClock('manual');
    const clock = new ServerClock();
    clock.follow(memory);
    const moved = jest.fn();
    clock.onChange(moved);
    // A reply computed before a move, read after it, must not set the clock back.
    clock.observe(1_000, 0);
    now.mockReturnValue(65_000);
    expect(clock.estimate()).toBe(5_000);
    expect(clock.still).toBe(true);
    expect(clock.waitFor(5_000)).toBe(0);
    expect(clock.waitFor(5_001)).toBe(Infinity);
    memory.advance(10_000);
    expect(moved).toHaveBeenCalledTimes(1);
    expect(clock.waitFor(15_000)).toBe(0);
    clock.close();
    memory.advance(1);
    expect(moved).toHaveBeenCalledTimes(1);
  });
});
