import { Slots } from './slots';

describe('Slots', () => {
  it('reserves at most the free slots, and at most the asked number', async () => {
    const slots = new Slots(4);
    expect(await slots.acquire(3)).toBe(3);
    expect(await slots.acquire(3)).toBe(1);
    expect(slots.inFlight).toBe(4);
  });

  it('makes a waiter wait for a release, then never hands it zero slots', async () => {
    const slots = new Slots(1);
    expect(await slots.acquire(1)).toBe(1);
    const waiting = slots.acquire(1);
    let got: number | undefined;
    void waiting.then((n) => (got = n));
    await Promise.resolve();
    expect(got).toBeUndefined();
    slots.release(1);
    // A caller that did not wait takes the freed slot first: the waiter must wait again, not get 0.
    expect(await slots.acquire(1)).toBe(1);
    await new Promise((resolve) => setImmediate(resolve));
    expect(got).toBeUndefined();
    slots.release(1);
    expect(await waiting).toBe(1);
  });

  it('tells when everything in flight is done, and releases waiters with 0 on close', async () => {
    const slots = new Slots(2);
    await slots.acquire(2);
    let finish!: () => void;
    slots.run(() => new Promise<void>((resolve) => (finish = resolve)));
    slots.release(1);
    let idle = false;
    void slots.whenIdle().then(() => (idle = true));
    await Promise.resolve();
    expect(idle).toBe(false);
    finish();
    await new Promise((resolve) => setImmediate(resolve));
    expect(idle).toBe(true);

    await slots.acquire(2);
    const waiter = slots.acquire(1);
    slots.close();
    expect(await waiter).toBe(0);
  });
});
