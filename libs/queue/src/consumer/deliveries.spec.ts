import { HandlerTimeoutError } from '../errors';
import { ABANDONED, Deliveries, LazyAbort, leaseLost, overdue, type RunningDelivery } from './deliveries';

const delivery = (shard = 0, what = 'task "t"'): RunningDelivery => ({
  shard,
  aborter: new LazyAbort(),
  what,
  subject: { id: what },
});
const never = () => new Promise<never>(() => undefined);

describe('Deliveries', () => {
  beforeEach(() => jest.useFakeTimers());
  afterEach(() => jest.useRealTimers());

  function make(extend?: (shard: number, deliveries: RunningDelivery[]) => Promise<boolean[]>) {
    const lost: RunningDelivery[] = [];
    const overdueOnes: RunningDelivery[] = [];
    const late: [RunningDelivery, number][] = [];
    const deliveries = new Deliveries<RunningDelivery>({
      leaseMs: 300,
      extend,
      lost: (d) => lost.push(d),
      extendFailed: () => undefined,
      handlerTimeoutMs: 1000,
      overdue: (d) => overdueOnes.push(d),
      settledLate: (d, ms) => late.push([d, ms]),
    });
    return { deliveries, lost, overdue: overdueOnes, late };
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

  it('past handlerTimeoutMs aborts the signal with a HandlerTimeoutError and frees the slot, but keeps the delivery until its handler settles', async () => {
    const extended: RunningDelivery[][] = [];
    const {
      deliveries,
      overdue: reported,
      late,
    } = make(async (_shard, running) => {
      extended.push(running);
      return running.map(() => true);
    });
    const d = delivery(0, 'batch of group "g"');
    let settle!: (value: string) => void;
    let freed = 0;
    const run = deliveries.run(
      d,
      () => new Promise<string>((resolve) => (settle = resolve)),
      () => freed++,
    );
    jest.advanceTimersByTime(999);
    expect(d.aborter.aborted).toBe(false);
    expect(freed).toBe(0);
    jest.advanceTimersByTime(1);
    const error = d.aborter.reason;
    expect(error).toBeInstanceOf(HandlerTimeoutError);
    expect((error as HandlerTimeoutError).message).toMatch(/batch of group "g" did not settle within 1000 ms/);
    expect(overdue(d)).toBe(true);
    expect(leaseLost(d)).toBe(false);
    expect(freed).toBe(1);
    expect(reported).toEqual([d]);
    expect(deliveries.timedOut).toBe(1);
    expect(deliveries.overdueCount).toBe(1);
    // Still running: still held, its lease still extended.
    expect(deliveries.size).toBe(1);
    extended.length = 0;
    await jest.advanceTimersByTimeAsync(500);
    expect(extended).toEqual([[d], [d], [d], [d], [d]]);
    expect(deliveries.overdue().map(({ delivery: o, overdueMs }) => [o, overdueMs])).toEqual([[d, 500]]);
    settle('late');
    await expect(run).resolves.toBe('late');
    expect(late).toEqual([[d, 500]]);
    expect(deliveries.size).toBe(0);
    expect(deliveries.overdueCount).toBe(0);
    expect(freed).toBe(1);
    expect(jest.getTimerCount()).toBe(0);
  });

  it('keeps every deadline with one timer: each delivery times out at its own, started apart', async () => {
    const { deliveries, overdue: reported } = make();
    const first = Array.from({ length: 50 }, () => delivery());
    const runs = first.map((d) => deliveries.run(d, never).catch((e: unknown) => e));
    jest.advanceTimersByTime(400);
    const later = Array.from({ length: 50 }, () => delivery());
    runs.push(...later.map((d) => deliveries.run(d, never).catch((e: unknown) => e)));
    // A hundred deliveries under way, one deadline timer.
    expect(jest.getTimerCount()).toBe(1);
    jest.advanceTimersByTime(599);
    expect(reported).toEqual([]);
    jest.advanceTimersByTime(1);
    expect(reported).toEqual(first);
    jest.advanceTimersByTime(399);
    expect(reported).toHaveLength(50);
    jest.advanceTimersByTime(1);
    expect(reported).toEqual([...first, ...later]);
    expect(deliveries.abandon(new Error('stop'))).toHaveLength(100);
    await Promise.all(runs);
    expect(jest.getTimerCount()).toBe(0);
  });

  it('a delivery that settles in time leaves the deadline timer to the next one, or clears it when none runs', async () => {
    const { deliveries, overdue: reported } = make();
    let settle!: () => void;
    const early = deliveries.run(delivery(), () => new Promise<void>((resolve) => (settle = resolve)));
    jest.advanceTimersByTime(500);
    const late = delivery();
    const run = deliveries.run(late, never).catch((e: unknown) => e);
    settle();
    await early;
    jest.advanceTimersByTime(500);
    expect(reported).toEqual([]);
    jest.advanceTimersByTime(500);
    expect(reported).toEqual([late]);
    deliveries.abandon(new Error('stop'));
    await run;
    await deliveries.run(delivery(), () => 'quick');
    expect(jest.getTimerCount()).toBe(0);
  });

  it("does not take a handler's own HandlerTimeoutError for its deadline", async () => {
    const { deliveries } = make();
    const d = delivery();
    const own = new HandlerTimeoutError(5, 'something else');
    const error = await deliveries.run(d, () => Promise.reject(own)).catch((e: unknown) => e);
    expect(error).toBe(own);
    expect(overdue(d)).toBe(false);
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
    const c = delivery(1);
    const runs = [deliveries.run(a, never), deliveries.run(b, never)].map((run) => run.catch((e: unknown) => e));
    jest.advanceTimersByTime(600);
    runs.push(deliveries.run(c, never).catch((e: unknown) => e));
    // a and b are overdue, c is not: shutdown gives every one of them up.
    jest.advanceTimersByTime(400);
    expect(deliveries.overdueCount).toBe(2);
    const reason = new Error('shutdown timeout ran out');
    expect(deliveries.abandon(reason)).toEqual([a, b, c]);
    expect(await Promise.all(runs)).toEqual([ABANDONED, ABANDONED, ABANDONED]);
    expect(overdue(a) && overdue(b)).toBe(true);
    expect(c.aborter.reason).toBe(reason);
    expect(deliveries.overdueCount).toBe(0);
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
    expect(leaseLost(gone)).toBe(true);
    expect(lost).toEqual([gone]);
    expect(kept.some((d) => d.aborter.aborted)).toBe(false);
    deliveries.abandon(new Error('stop'));
    await Promise.all(runs);
    calls.length = 0;
    await jest.advanceTimersByTimeAsync(1000);
    expect(calls).toEqual([]);
  });
});
