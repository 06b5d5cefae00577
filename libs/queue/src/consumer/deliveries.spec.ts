import { HandlerTimeoutError } from '../errors';
import { ABANDONED, Deliveries, LazyAbort, type RunningDelivery, timedOut } from './deliveries';

const delivery = (shard = 0, what = 'task "t"'): RunningDelivery => ({
  shard,
  aborter: new LazyAbort(),
  what,
});
const never = () => new Promise<never>(() => undefined);

describe('Deliveries', () => {
  beforeEach(() => jest.useFakeTimers());
  afterEach(() => jest.useRealTimers());

  function make(extend?: (shard: number, deliveries: RunningDelivery[]) => Promise<boolean[]>) {
    const lost: RunningDelivery[] = [];
    const deliveries = new Deliveries<RunningDelivery>({
      leaseMs: 300,
      extend,
      lost: (d) => lost.push(d),
      extendFailed: () => undefined,
      handlerTimeoutMs: 1000,
    });
    return { deliveries, lost };
  }

  it("passes on the handler's value and its throw (a synchronous one too), and forgets the delivery", async () => {
    const { deliveries } = make();
    await expect(deliveries.run(delivery(), () => 42)).resolves.toBe(42);
    await expect(deliveries.run(delivery(), () => Promise.reject(new Error('async')))).rejects.toThrow('async');
    await expect(
      deliveries.run(delivery(), () => {
        throw new Error('sync');
      }),
    ).rejects.toThrow('sync');
    expect(deliveries.size).toBe(0);
    expect(jest.getTimerCount()).toBe(0);
  });

  it('rejects with a HandlerTimeoutError once handlerTimeoutMs passed, aborting the signal with it', async () => {
    const { deliveries } = make();
    const d = delivery(0, 'batch of group "g"');
    const run = deliveries.run(d, never);
    jest.advanceTimersByTime(999);
    expect(d.aborter.aborted).toBe(false);
    jest.advanceTimersByTime(1);
    const error = await run.catch((e: unknown) => e);
    expect(error).toBeInstanceOf(HandlerTimeoutError);
    expect((error as HandlerTimeoutError).message).toMatch(/batch of group "g" did not settle within 1000 ms/);
    expect(d.aborter.reason).toBe(error);
    expect(timedOut(error, d)).toBe(true);
    expect(deliveries.timedOut).toBe(1);
    expect(deliveries.size).toBe(0);
  });

  it("does not take a handler's own HandlerTimeoutError for its deadline", async () => {
    const { deliveries } = make();
    const d = delivery();
    const own = new HandlerTimeoutError(5, 'something else');
    const error = await deliveries.run(d, () => Promise.reject(own)).catch((e: unknown) => e);
    expect(timedOut(error, d)).toBe(false);
    expect(deliveries.timedOut).toBe(0);
  });

  it('makes no AbortController unless the signal is asked for, and a late one starts aborted', () => {
    const quiet = new LazyAbort();
    quiet.abort('why');
    expect(quiet.aborted).toBe(true);
    expect(quiet.signal.aborted).toBe(true);
    expect(quiet.signal.reason).toBe('why');
    const early = new LazyAbort();
    const { signal } = early;
    early.abort('first');
    early.abort('second');
    expect(signal.reason).toBe('first');
  });

  it('abandon() aborts every running handler, rejects their runs with ABANDONED and clears every timer', async () => {
    const { deliveries } = make(async (_shard, running) => running.map(() => true));
    const a = delivery(0);
    const b = delivery(1);
    const runs = [deliveries.run(a, never), deliveries.run(b, never)].map((run) => run.catch((e: unknown) => e));
    const reason = new Error('shutdown timeout ran out');
    expect(deliveries.abandon(reason)).toEqual([a, b]);
    expect(await Promise.all(runs)).toEqual([ABANDONED, ABANDONED]);
    expect([a.aborter.reason, b.aborter.reason]).toEqual([reason, reason]);
    expect(jest.getTimerCount()).toBe(0);
  });

  it('extends the leases of running deliveries every third of the lease, one call per shard, and only while any runs', async () => {
    const calls: [number, number][] = [];
    const { deliveries, lost } = make(async (shard, running) => {
      calls.push([shard, running.length]);
      return running.map((d) => d.what !== 'lost');
    });
    const kept = [delivery(0), delivery(0), delivery(1)];
    const gone = delivery(1, 'lost');
    const runs = [...kept, gone].map((d) => deliveries.run(d, never).catch(() => undefined));
    await jest.advanceTimersByTimeAsync(100);
    expect(calls).toEqual([
      [0, 2],
      [1, 2],
    ]);
    expect(gone.aborter.aborted).toBe(true);
    expect(lost).toEqual([gone]);
    expect(kept.some((d) => d.aborter.aborted)).toBe(false);
    deliveries.abandon(new Error('stop'));
    await Promise.all(runs);
    calls.length = 0;
    await jest.advanceTimersByTimeAsync(1000);
    expect(calls).toEqual([]);
  });
});
