import { deadline, raceTimeout, TIMED_OUT, waitOrTimeout } from './timers';

describe('timers', () => {
  it('resolves with the work when it settles in time, and passes a rejection on', async () => {
    await expect(raceTimeout(Promise.resolve(7), 1000)).resolves.toBe(7);
    await expect(deadline(Promise.resolve('done'), 1000, 'late')).resolves.toBe('done');
    await expect(waitOrTimeout(Promise.resolve(), 1000)).resolves.toBe(true);
    await expect(raceTimeout(Promise.reject(new Error('failed')), 1000)).rejects.toThrow('failed');
  });

  it('reports the timeout when the work never settles', async () => {
    const never = new Promise<never>(() => undefined);
    await expect(raceTimeout(never, 5)).resolves.toBe(TIMED_OUT);
    await expect(deadline(never, 5, 'no reply within 5 ms')).rejects.toThrow('no reply within 5 ms');
    await expect(waitOrTimeout(never, 5)).resolves.toBe(false);
  });
});
