import { QueueInputError } from '../errors';
import { resolveDelta, resolveNewTime, resolveTime, toEpochMs } from './time';

describe('resolveTime', () => {
  it('takes delays relative to the server clock and absolute times as epoch ms', () => {
    expect(resolveTime({ delayMs: 1500 })).toEqual(['in', 1500]);
    expect(resolveTime({ runAt: new Date('2030-01-01T00:00:00Z') })).toEqual(['at', Date.UTC(2030, 0, 1)]);
    expect(resolveTime({ runAt: '2030-01-01T00:00:00.250Z' })).toEqual(['at', Date.UTC(2030, 0, 1) + 250]);
    expect(resolveTime({ runAt: 42 })).toEqual(['at', 42]);
    expect(resolveTime(undefined)).toEqual(['in', 0]);
  });

  it('treats the past as due now without losing the given time', () => {
    expect(resolveTime({ delayMs: -5000 })).toEqual(['in', -5000]);
    expect(resolveTime({ runAt: new Date(0) })).toEqual(['at', 0]);
    expect(resolveTime({ runAt: -1000 })).toEqual(['at', 0]);
  });

  it.each([
    [{ delayMs: Number.NaN }, /finite/],
    [{ delayMs: Number.POSITIVE_INFINITY }, /finite/],
    [{ delayMs: 1.5 }, /whole milliseconds/],
    [{ delayMs: '10' }, /must be a number/],
    [{ runAt: new Date('nope') }, /invalid Date/],
    [{ runAt: 'next tuesday' }, /cannot be parsed|can be parsed/],
    [{ runAt: 1e300 }, /out of range/],
    [{ delayMs: 8.64e15 - 1000 }, /delayMs is out of range: now \+ 8639999999999000 ms is past/],
    [{ runAt: null }, /must be a Date/],
    [{ runAt: 1, delayMs: 1 }, /either delayMs or runAt/],
  ])('refuses %p', (time, message) => {
    expect(() => resolveTime(time as never)).toThrow(QueueInputError);
    expect(() => resolveTime(time as never)).toThrow(message);
  });

  it('validates shifts', () => {
    expect(resolveDelta(-7_200_000)).toBe(-7_200_000);
    expect(() => resolveDelta(Number.NaN)).toThrow(QueueInputError);
    expect(() => toEpochMs({})).toThrow(/must be a Date/);
  });
});

describe('resolveNewTime', () => {
  it('takes a new time as resolveTime does', () => {
    expect(resolveNewTime({ delayMs: 0 })).toEqual(['in', 0]);
    expect(resolveNewTime({ runAt: 42 })).toEqual(['at', 42]);
  });

  it.each([
    [{}, /got \{\}/],
    [{ delayMs: undefined }, /got \{ delayMs: undefined \}/],
    [{ runAt: undefined, delayMs: undefined }, /got \{ runAt: undefined, delayMs: undefined \}/],
    [undefined, /got undefined/],
    [null, /got null/],
  ])('refuses a move without a time: %p', (time, shown) => {
    expect(() => resolveNewTime(time)).toThrow(QueueInputError);
    expect(() => resolveNewTime(time)).toThrow(shown);
    expect(() => resolveNewTime(time)).toThrow(/needs the new time as \{ runAt \} or \{ delayMs \}.*\{ delayMs: 0 \}/);
  });
});
