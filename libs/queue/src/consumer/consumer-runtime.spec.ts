import { Logger } from '@nestjs/common';
import { HandlerTimeoutError } from '../errors';
import { QueueEvents } from '../events/queue-events';
import { ServerClock } from '../redis/server-clock';
import { pollUntil } from '@test/support/testing';
import type {
  Abandoned,
  ConsumerAdapter,
  DeliveryFate,
  HandlerResult,
  DeliveryReports,
  OpenedDelivery,
  RecordedFate,
  Settlement,
} from './consumer-adapter';
import { ConsumerRuntime } from './consumer-runtime';
import { LazyAbort } from './deliveries';
import { OutcomeReporter } from './outcome-reporter';
import { RetryPolicy } from './retry-policy';

/** A claimed item of the fake queue: what its handler does, and what its settlement says. */
interface Item {
  id: string;
  run: (delivery: FakeDelivery) => unknown;
  /** The outcome `settle` reports for a failure (default: retry in an hour). */
  failure?: DeliveryFate;
  /** Items the settlement hands over to the same slot, when it is asked for. */
  next?: Item;
  /** How long before its hand-over this item was claimed (server ms): a paused process gets it late. */
  claimedAgoMs?: number;
}

class FakeDelivery implements OpenedDelivery {
  readonly aborter = new LazyAbort();
  attempt = 1;

  constructor(
    readonly shard: number,
    readonly item: Item,
  ) {}

  get what() {
    return `task "${this.item.id}"`;
  }

  get subject() {
    return { id: this.item.id };
  }

  call() {
    return this.item.run(this);
  }

  fields() {
    return { id: this.item.id };
  }

  event() {
    return {
      queue: 'fake',
      id: this.item.id,
      attempt: this.attempt,
      runAt: 0,
      dueAt: 0,
      firedAt: 0,
      consumer: 'Fake.handle',
    };
  }

  trace() {
    return { attributes: {} };
  }
}

/** The fake queue names its outcomes with a DelayQueue's task events, the ones these tests listen to. */
const FAKE_REPORTS: DeliveryReports<FakeDelivery> = {
  words: { retry: 'failed, will retry', nextAt: 'nextRunAt', dead: 'dead-lettered', failed: 'failed for good' },
  completed: (events, delivery, durationMs) => events.emit('task.completed', { ...delivery.event(), durationMs }),
  retry: (events, delivery, durationMs, error, nextRunAt) =>
    events.emit('task.failed', { ...delivery.event(), durationMs, error, nextRunAt }),
  dead: (events, delivery, durationMs, error, diedAt) =>
    events.emit('task.dead', { ...delivery.event(), durationMs, error, diedAt }),
  failed: () => undefined,
};

/** A queue kept in memory, so that the runtime is driven without Redis. */
class FakeAdapter implements ConsumerAdapter<Item, FakeDelivery> {
  readonly kind = 'delay';
  readonly reports = FAKE_REPORTS;
  readonly leaseMs = 150;
  redeliversLapsed = true;
  localRetries?: RetryPolicy;
  readonly waiting: Item[] = [];
  readonly settled: { id: string; result: HandlerResult; next: boolean; attempt: number }[] = [];
  readonly extended: string[] = [];
  readonly givenBack: string[] = [];
  /** Leases `extend` reports lost. */
  readonly lost = new Set<string>();
  claims = 0;

  async claim(_shard: number, limit: number) {
    this.claims++;
    const items = this.waiting.splice(0, limit);
    const serverNow = Date.now();
    return { poll: { serverNow, nextDueAt: this.waiting.length > 0 ? serverNow : Infinity }, items };
  }

  open(shard: number, item: Item) {
    return new FakeDelivery(shard, item);
  }

  settle(delivery: FakeDelivery, result: HandlerResult, next: boolean): Settlement<Item> {
    const { item } = delivery;
    this.settled.push({ id: item.id, result, next, attempt: delivery.attempt });
    const recorded: RecordedFate = result.ok
      ? { fate: { type: 'acknowledged' } }
      : { fate: item.failure ?? { type: 'retry', at: Date.now() + 3_600_000 } };
    if (recorded.fate.type === 'retry') recorded.due = { at: recorded.fate.at };
    return {
      recorded: Promise.resolve(recorded),
      ...(next &&
        item.next && {
          next: Promise.resolve({ item: item.next, claimedAt: Date.now() - (item.next.claimedAgoMs ?? 0) }),
        }),
    };
  }

  async extend(_shard: number, deliveries: FakeDelivery[]) {
    this.extended.push(...deliveries.map(({ item }) => item.id));
    return deliveries.map(({ item }) => !this.lost.has(item.id));
  }

  async giveBack(abandoned: Abandoned<FakeDelivery>[]) {
    this.givenBack.push(...abandoned.map(({ delivery, counted }) => delivery.item.id + (counted ? ' (counted)' : '')));
    return abandoned.length;
  }
}

describe('ConsumerRuntime (driven by a fake adapter, no Redis)', () => {
  let adapter: FakeAdapter;
  let events: QueueEvents;
  let hints: { channel: string; publish: jest.Mock; now: jest.Mock };
  const runtimes: ConsumerRuntime<Item, FakeDelivery>[] = [];

  beforeEach(() => {
    adapter = new FakeAdapter();
    events = new QueueEvents();
    hints = { channel: 'fake:wake', publish: jest.fn(), now: jest.fn() };
  });

  afterEach(async () => {
    await Promise.all(runtimes.splice(0).map((runtime) => runtime.stop(100)));
  });

  let warnings: string[];

  function runtime(options: { concurrency?: number; handlerTimeoutMs?: number } = {}) {
    const logger = new Logger('test', { timestamp: false });
    warnings = [];
    jest.spyOn(logger, 'warn').mockImplementation((message: string) => void warnings.push(message));
    jest.spyOn(logger, 'log').mockImplementation(() => undefined);
    jest.spyOn(logger, 'error').mockImplementation(() => undefined);
    const reporter = new OutcomeReporter<FakeDelivery>({
      queue: 'fake',
      reports: adapter.reports,
      label: 'Fake.handle',
      logger,
      events,
    });
    const built = new ConsumerRuntime<Item, FakeDelivery>({
      queue: 'fake',
      shards: 1,
      label: 'Fake.handle',
      adapter,
      reporter,
      connection: { clock: new ServerClock(), subscribe: async () => () => undefined },
      hints,
      concurrency: options.concurrency ?? 2,
      handlerTimeoutMs: options.handlerTimeoutMs ?? 60_000,
      idlePollMs: 20,
    });
    runtimes.push(built);
    return built;
  }

  const item = (id: string, run: Item['run'] = () => undefined, more: Partial<Item> = {}): Item => ({
    id,
    run,
    ...more,
  });

  it('runs claimed items at most `concurrency` at a time and settles each once', async () => {
    let running = 0;
    let most = 0;
    const run = async () => {
      most = Math.max(most, ++running);
      await new Promise((resolve) => setTimeout(resolve, 5));
      running--;
    };
    adapter.waiting.push(...Array.from({ length: 10 }, (_, n) => item(`t${n}`, run)));
    const completed: string[] = [];
    events.on('task.completed', ({ id }) => void completed.push(id));
    const consumer = runtime({ concurrency: 3 });
    await consumer.start();
    await pollUntil(() => completed.length === 10, 'ten settled items');
    expect(most).toBe(3);
    expect(adapter.settled.map(({ id }) => id).sort()).toEqual(completed.sort());
    expect(adapter.settled.every(({ result }) => result.ok)).toBe(true);
    expect(consumer.status()).toMatchObject({ claimed: 10, inFlight: 0, running: true });
  });

  it('settles a throw as a failure, reports its outcome and makes the retry due in every process', async () => {
    const failed: unknown[] = [];
    events.on('task.failed', ({ error }) => void failed.push(error));
    const error = new Error('upstream refused');
    adapter.waiting.push(
      item('bad', () => {
        throw error;
      }),
    );
    await runtime().start();
    await pollUntil(() => failed.length === 1, 'the failure reported');
    expect(failed[0]).toBe(error);
    expect(adapter.settled[0]).toMatchObject({ id: 'bad', result: { ok: false, error } });
    // Due in an hour: the other processes are told.
    expect(hints.publish).toHaveBeenCalledWith(0, expect.any(Number), expect.any(Number));
    expect(hints.publish.mock.calls[0][1]).toBeGreaterThan(Date.now() + 3_000_000);
  });

  it('retries in this process when the adapter asks for it, counting the attempts', async () => {
    adapter.localRetries = new RetryPolicy(3, { type: 'fixed', delayMs: 1, maxDelayMs: 1 });
    let calls = 0;
    adapter.waiting.push(
      item('flaky', () => {
        if (++calls < 3) throw new Error(`attempt ${calls}`);
      }),
    );
    await runtime().start();
    await pollUntil(() => adapter.settled.length === 1, 'the item settled');
    expect(calls).toBe(3);
    expect(adapter.settled[0]).toMatchObject({ result: { ok: true }, attempt: 3 });
  });

  it('stops retrying in this process after the policy’s last attempt', async () => {
    adapter.localRetries = new RetryPolicy(2, { type: 'fixed', delayMs: 1, maxDelayMs: 1 });
    let calls = 0;
    adapter.waiting.push(
      item(
        'broken',
        () => {
          throw new Error(`attempt ${++calls}`);
        },
        { failure: { type: 'failed' } },
      ),
    );
    await runtime().start();
    await pollUntil(() => adapter.settled.length === 1, 'the item settled');
    expect(calls).toBe(2);
    expect(adapter.settled[0]).toMatchObject({ result: { ok: false }, attempt: 2 });
  });

  it('hands a slot the items settlements give it, and gives the slot back after 16 in a row', async () => {
    const chain = Array.from({ length: 20 }, (_, n) => item(`g${n}`));
    chain.forEach((link, n) => (link.next = chain[n + 1]));
    adapter.waiting.push(chain[0]);
    await runtime().start();
    await pollUntil(() => adapter.settled.length === 16, 'sixteen in a row');
    expect(adapter.claims).toBeGreaterThanOrEqual(1);
    expect(adapter.settled.slice(0, 15).every(({ next }) => next)).toBe(true);
    // The sixteenth asks for nothing more: the group goes back to the queue.
    expect(adapter.settled[15].next).toBe(false);
    expect(adapter.settled.map(({ id }) => id)).toEqual(chain.slice(0, 16).map(({ id }) => id));
  });

  it('does not start an item whose lease ran out before it could, where the adapter delivers it again', async () => {
    const ran: string[] = [];
    const run = ({ item: { id } }: FakeDelivery) => void ran.push(id);
    const late = item('late', run, { claimedAgoMs: 1000 });
    const onTime = item('on-time', run, { claimedAgoMs: 100 });
    adapter.waiting.push(item('first', run, { next: late }), item('second', run, { next: onTime }));
    await runtime({ concurrency: 1 }).start();
    await pollUntil(() => adapter.settled.length === 3, 'three settled');
    expect(ran).toEqual(['first', 'second', 'on-time']);
    expect(warnings).toEqual([
      expect.stringMatching(/did not start the task "late": its lease had run out \d+ ms before/),
    ]);
  });

  it('starts it all the same where nothing would deliver it again (at most once)', async () => {
    adapter.redeliversLapsed = false;
    const ran: string[] = [];
    adapter.waiting.push(
      item('first', () => undefined, { next: item('late', () => void ran.push('late'), { claimedAgoMs: 1000 }) }),
    );
    await runtime({ concurrency: 1 }).start();
    await pollUntil(() => ran.length === 1, 'the late item run');
    expect(warnings).toEqual([]);
  });

  it('past handlerTimeoutMs aborts the signal and frees the slot, but keeps the delivery held until it settles', async () => {
    let release!: () => void;
    let signal: AbortSignal | undefined;
    adapter.waiting.push(
      item('hung', (delivery) => {
        signal = delivery.aborter.signal;
        return new Promise<void>((resolve) => (release = resolve));
      }),
      item('other'),
    );
    const timeouts: unknown[] = [];
    events.on('handler.timeout', (event) => void timeouts.push(event));
    const consumer = runtime({ concurrency: 1, handlerTimeoutMs: 50 });
    await consumer.start();
    await pollUntil(() => adapter.settled.some(({ id }) => id === 'other'), 'the other item, in the freed slot');
    expect(signal?.reason).toBeInstanceOf(HandlerTimeoutError);
    expect(timeouts).toEqual([expect.objectContaining({ id: 'hung', timeoutMs: 50 })]);
    expect(consumer.status().overdue).toEqual([expect.objectContaining({ id: 'hung' })]);
    // Held: its lease is extended while it runs, and nothing settled it.
    await pollUntil(() => adapter.extended.includes('hung'), 'its lease extended');
    expect(adapter.settled.some(({ id }) => id === 'hung')).toBe(false);
    release();
    await pollUntil(() => adapter.settled.some(({ id }) => id === 'hung'), 'its outcome, once it settled');
    expect(consumer.status().overdue).toEqual([]);
  });

  it('aborts the signal of a delivery whose lease the heartbeat finds lost', async () => {
    let signal: AbortSignal | undefined;
    adapter.lost.add('stolen');
    adapter.waiting.push(
      item('stolen', (delivery) => {
        signal = delivery.aborter.signal;
        return new Promise((resolve) => delivery.aborter.signal.addEventListener('abort', resolve));
      }),
    );
    await runtime().start();
    await pollUntil(() => signal?.aborted === true, 'the signal aborted');
    expect(String(signal!.reason)).toMatch(/lease lost/);
  });

  it('stop() gives back what outlives its timeout and wakes the other processes at once', async () => {
    adapter.waiting.push(item('stuck', () => new Promise(() => undefined)));
    const consumer = runtime();
    await consumer.start();
    await pollUntil(() => consumer.status().inFlight === 1, 'the stuck handler');
    expect(await consumer.stop(50)).toBe(false);
    expect(adapter.givenBack).toEqual(['stuck']);
    expect(hints.now).toHaveBeenCalledWith(0);
    expect(consumer.status().running).toBe(false);
  });

  it('stop() counts the attempt of a delivery given back past handlerTimeoutMs, not of one within its time', async () => {
    adapter.waiting.push(item('hung', () => new Promise(() => undefined)));
    // Long enough that the fresh handler stays within its time until stop(), even on a loaded machine.
    const consumer = runtime({ handlerTimeoutMs: 500 });
    await consumer.start();
    await pollUntil(() => consumer.status().overdue.length === 1, 'the hung handler past its deadline');
    adapter.waiting.push(item('fresh', () => new Promise(() => undefined)));
    await pollUntil(() => consumer.status().inFlight === 1, 'the fresh handler in the freed slot');
    expect(await consumer.stop(5)).toBe(false);
    expect(adapter.givenBack.sort()).toEqual(['fresh', 'hung (counted)']);
    expect(warnings).toContainEqual(expect.stringMatching(/gave unfinished work back.*count=2 countedAsAttempts=1/));
  });

  it('claims nothing while held, and again once released', async () => {
    const consumer = runtime();
    consumer.hold();
    adapter.waiting.push(item('later'));
    await consumer.start();
    // A few idle polls' worth of time: a held consumer sends nothing.
    await new Promise((resolve) => setTimeout(resolve, 100));
    expect(adapter.claims).toBe(0);
    consumer.release();
    await pollUntil(() => adapter.settled.length === 1, 'the item after release()');
  });

  it('claims nothing once held, even with a poll that was waiting for a free slot', async () => {
    let finish!: () => void;
    const busy = new Promise<void>((resolve) => (finish = resolve));
    adapter.waiting.push(item('busy', () => busy));
    const consumer = runtime({ concurrency: 1 });
    await consumer.start();
    await pollUntil(() => adapter.settled.length === 0 && adapter.waiting.length === 0, 'the slot taken');
    // The next poll (at idlePollMs) waits for the slot; the consumer is held before it gets it.
    adapter.waiting.push(item('later'));
    await new Promise((resolve) => setTimeout(resolve, 50));
    const claims = adapter.claims;
    consumer.hold();
    finish();
    await pollUntil(() => adapter.settled.length === 1, 'the busy item settled');
    await new Promise((resolve) => setTimeout(resolve, 100));
    expect(adapter.claims).toBe(claims);
    consumer.release();
    await pollUntil(() => adapter.settled.length === 2, 'the item after release()');
  });
});
