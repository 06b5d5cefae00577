import { randomBytes } from 'node:crypto';
import { ConsumerRegistry } from '../consumer/consumer.registry';
import { QueueConfigError } from '../errors';
import { QueueEvents } from '../events/queue-events';
import type { FixedQueueOptions } from '../interfaces';
import { QueueSettings } from '../queue.settings';
import { RedisConnection } from '../redis/redis-connection';
import { resolveBatchConsumerOptions } from '../validation/consumer-options';
import { BatchConsumerAdapter, type BatchDelivery, type BatchHandler } from './batch-consumer.adapter';
import { FixedQueue } from './fixed-queue';
import { pollUntil } from '@test/support/testing';

/**
 * The FixedQueue adapter against the real redis-server of the test run (REDIS_URL): claims,
 * acknowledgements handing the group's next batch over, failures and leases, called one by one.
 */
describe('BatchConsumerAdapter (on real Redis)', () => {
  let connection: RedisConnection;
  let settings: QueueSettings;
  const queues: FixedQueue<number>[] = [];

  beforeEach(() => {
    const options = { connection: process.env.REDIS_URL!, prefix: `unit-${randomBytes(4).toString('hex')}` };
    settings = QueueSettings.resolve(options);
    connection = new RedisConnection(options, settings);
  });

  afterEach(async () => {
    for (const queue of queues.splice(0)) await queue.obliterate({ force: true });
    await connection.onApplicationShutdown();
  });

  async function queueOf(options: Omit<FixedQueueOptions, 'name'>): Promise<FixedQueue<number>> {
    const queue = new FixedQueue<number>(
      { name: 'events', shards: 1, maxWaitMs: 0, ...options },
      connection,
      settings,
      new QueueEvents(),
      new ConsumerRegistry(),
    );
    await queue.onModuleInit();
    queues.push(queue);
    return queue;
  }

  function adapter(queue: FixedQueue<number>, consumer: object = {}, handler: BatchHandler = () => undefined) {
    const options = resolveBatchConsumerOptions(consumer, 'Unit.report', () => undefined);
    return new BatchConsumerAdapter({ queue, label: 'Unit.report', options, handler, traced: false });
  }

  /** Polls the shard until a batch is claimed (a poll may only list the due groups for the next). */
  async function claimOne(batches: BatchConsumerAdapter): Promise<BatchDelivery> {
    let delivery: BatchDelivery | undefined;
    await pollUntil(async () => {
      const { items, poll } = await batches.claim(0, 1);
      if (items.length > 0) delivery = batches.open(0, items[0], poll.serverNow);
      return delivery !== undefined;
    }, 'a batch claimed');
    return delivery!;
  }

  const atLeastOnce = {
    delivery: 'at-least-once',
    batchSize: 2,
    maxAttempts: 2,
    backoff: { type: 'exponential', delayMs: 60_000 },
  } as const;

  it('acknowledges an ordered batch and hands the group’s next one to the same slot', async () => {
    const queue = await queueOf(atLeastOnce);
    await queue.pushMany('g', [1, 2, 3, 4, 5]);
    const seen: unknown[] = [];
    const batches = adapter(queue, {}, (messages, ctx) => void seen.push(messages, ctx.group, ctx.attempt));
    const first = await claimOne(batches);
    await first.call();
    expect(seen).toEqual([[1, 2], 'g', 1]);
    const settlement = batches.settle(first, { ok: true }, true);
    expect((await settlement.recorded).fate).toEqual({ type: 'acknowledged' });
    const next = await settlement.next;
    expect(next?.item.messages).toEqual([3, 4]);
    // Without asking, nothing is handed over.
    const second = batches.open(0, next!.item, next!.claimedAt);
    expect(batches.settle(second, { ok: true }, false).next).toBeUndefined();
  });

  it('settles a failure as a retry after its backoff, then dead-letters the last attempt', async () => {
    const queue = await queueOf({ ...atLeastOnce, backoff: { type: 'exponential', delayMs: 20 } });
    await queue.pushMany('g', [1, 2]);
    const batches = adapter(queue);
    const first = await claimOne(batches);
    const before = Date.now();
    const retry = await batches.settle(first, { ok: false, error: new Error('no') }, false).recorded;
    expect(retry.fate.type).toBe('retry');
    const at = (retry.fate as { at: number }).at;
    expect(retry.due).toEqual({ at });
    expect(at).toBeGreaterThanOrEqual(before + 10);
    const second = await claimOne(batches);
    expect(second.attempt).toBe(2);
    expect(second.batch.messages).toEqual([1, 2]);
    const dead = await batches.settle(second, { ok: false, error: new Error('still no') }, false).recorded;
    expect(dead.fate.type).toBe('dead');
    expect(await queue.stats()).toMatchObject({ dead: 2 });
  });

  it("settles the last attempt as the group's pause under onExhausted 'pause-group', with nothing made due", async () => {
    const queue = await queueOf({ ...atLeastOnce, maxAttempts: 1, onExhausted: 'pause-group' });
    await queue.pushMany('g', [1, 2]);
    const batches = adapter(queue);
    const delivery = await claimOne(batches);
    const paused = await batches.settle(delivery, { ok: false, error: new Error('no') }, false).recorded;
    expect(paused).toEqual({ fate: { type: 'paused', at: expect.any(Number), acknowledged: 0, group: 'g' } });
    expect((await queue.pausedGroups()).items).toEqual([
      { group: 'g', pausedAt: expect.any(Number), reason: 'exhausted' },
    ]);
    expect(await queue.stats()).toMatchObject({ dead: 0, pending: 2, pausedGroups: 1 });
  });

  it('reports a lost lease without writing anything', async () => {
    const queue = await queueOf(atLeastOnce);
    await queue.pushMany('g', [1, 2]);
    const batches = adapter(queue);
    const delivery = await claimOne(batches);
    delivery.aborter.abort(new Error('lease lost'));
    expect(await batches.settle(delivery, { ok: false, error: new Error('no') }, false).recorded).toEqual({
      fate: { type: 'lease-lost' },
    });
    // Still held by the delivery: nothing failed it.
    expect(await batches.extend!(0, [delivery])).toEqual([true]);
  });

  it('at-most-once: retries in this process when the consumer asks for attempts, and a failure is only reported', async () => {
    const queue = await queueOf({ delivery: 'at-most-once', batchSize: 2 });
    const batches = adapter(queue, { maxAttempts: 3, backoff: { type: 'exponential', delayMs: 10 } });
    expect(batches.localRetries?.maxAttempts).toBe(3);
    expect(batches.localRetries?.delayAfter(2)).toBe(20);
    await queue.pushMany('g', [1, 2, 3]);
    const delivery = await claimOne(batches);
    const settled = batches.settle(delivery, { ok: false, error: new Error('no') }, false);
    expect((await settled.recorded).fate).toEqual({ type: 'failed' });
    // The group was let go: its next batch can be claimed.
    expect((await claimOne(batches)).batch.messages).toEqual([3]);
  });

  it('refuses consumer retries on an at-least-once queue, under either name', async () => {
    const queue = await queueOf(atLeastOnce);
    expect(() => adapter(queue, { maxAttempts: 2 })).toThrow(QueueConfigError);
    expect(() => adapter(queue, { retries: 1 })).toThrow(/maxAttempts \(formerly retries\) above 1/);
  });
});
