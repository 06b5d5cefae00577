import { Logger } from '@nestjs/common';
import { randomBytes } from 'node:crypto';
import { ConsumerRegistry } from '../consumer/consumer.registry';
import { ConsumerRuntime } from '../consumer/consumer-runtime';
import { OutcomeReporter } from '../consumer/outcome-reporter';
import { QueueEvents } from '../events/queue-events';
import { QueueSettings } from '../queue.settings';
import { RedisConnection } from '../redis/redis-connection';
import { resolveOptions } from '../validation/apply-rules';
import { DelayConsumerOptionsRules } from '../validation/consumer-options';
import { DelayConsumerAdapter, type DelayHandler, type TaskDelivery } from './delay-consumer.adapter';
import { DelayQueue } from './delay-queue';
import type { ClaimedTask } from './delay-queue.store';
import { pollUntil } from '@test/support/testing';

/**
 * The DelayQueue adapter against the real redis-server of the test run (REDIS_URL): claims, outcomes,
 * leases and give-backs, called one by one; then composed with the runtime, no Nest application around.
 */
describe('DelayConsumerAdapter (on real Redis)', () => {
  let connection: RedisConnection;
  let settings: QueueSettings;
  let queue: DelayQueue<{ n: number }>;
  const events = new QueueEvents();

  beforeEach(async () => {
    const options = {
      connection: process.env.REDIS_URL!,
      prefix: `unit-${randomBytes(4).toString('hex')}`,
      idlePollMs: 200,
    };
    settings = QueueSettings.resolve(options);
    connection = new RedisConnection(options, settings);
    queue = new DelayQueue(
      { name: 'tasks', shards: 2, maxAttempts: 2, backoff: { type: 'fixed', delayMs: 60_000 } },
      connection,
      settings,
      events,
      new ConsumerRegistry(),
    );
    await queue.onModuleInit();
  });

  afterEach(async () => {
    await queue.obliterate({ force: true });
    await connection.onApplicationShutdown();
  });

  const options = (raw: object = {}) => resolveOptions(DelayConsumerOptionsRules, raw, 'Unit.handle');

  function adapter(handler: DelayHandler = () => undefined) {
    return new DelayConsumerAdapter({
      queue,
      clock: connection.clock,
      label: 'Unit.handle',
      options: options(),
      handler,
    });
  }

  /** Claims the task `id` (due now) from its shard, and opens its delivery. */
  async function claimed(tasks: DelayConsumerAdapter, id: string): Promise<TaskDelivery> {
    for (let shard = 0; shard < 2; shard++) {
      const { items, poll } = await tasks.claim(shard, 10);
      const task = items.find((item: ClaimedTask) => item.id === id);
      if (task) return tasks.open(shard, task, poll.serverNow);
    }
    throw new Error(`task ${id} was not claimed`);
  }

  it('claims a due task under a lease, calls the handler with its payload, and acknowledges it', async () => {
    const seen: unknown[] = [];
    const tasks = adapter((payload, ctx) => void seen.push(payload, ctx.id, ctx.attempt));
    await queue.schedule({ n: 7 }, { id: 'a' });
    const delivery = await claimed(tasks, 'a');
    expect(await queue.get('a')).toMatchObject({ state: 'active' });
    await delivery.call();
    expect(seen).toEqual([{ n: 7 }, 'a', 1]);
    expect(await tasks.settle(delivery, { ok: true }).recorded).toEqual({ fate: { type: 'acknowledged' } });
    expect(await queue.get('a')).toBeNull();
  });

  it('settles a failure as a retry after the backoff, then dead-letters the last attempt', async () => {
    const tasks = adapter();
    await queue.schedule({ n: 1 }, { id: 'b' });
    const first = await claimed(tasks, 'b');
    const retry = await tasks.settle(first, { ok: false, error: new Error('no') }).recorded;
    expect(retry.fate.type).toBe('retry');
    // Due again after the queue's fixed backoff, and the runtime is told when.
    const at = (retry.fate as { at: number }).at;
    expect(retry.due).toEqual({ at });
    expect(at - Date.now()).toBeGreaterThan(50_000);
    await queue.reschedule('b', { delayMs: 0 });
    const second = await claimed(tasks, 'b');
    expect(second.attempt).toBe(2);
    const dead = await tasks.settle(second, { ok: false, error: new Error('still no') }).recorded;
    expect(dead.fate.type).toBe('dead');
    expect(await queue.get('b')).toMatchObject({ state: 'dead', lastError: expect.stringContaining('still no') });
  });

  it('reports a lease lost when the task was cancelled under its handler', async () => {
    const tasks = adapter();
    await queue.schedule({ n: 1 }, { id: 'c' });
    const delivery = await claimed(tasks, 'c');
    await queue.cancel('c');
    expect(await tasks.extend(delivery.shard, [delivery])).toEqual([false]);
    expect((await tasks.settle(delivery, { ok: true }).recorded).fate).toEqual({ type: 'lease-lost' });
  });

  it('gives back what shutdown abandoned: due again at once', async () => {
    const tasks = adapter();
    await queue.schedule({ n: 1 }, { id: 'd' });
    const delivery = await claimed(tasks, 'd');
    expect(await tasks.extend(delivery.shard, [delivery])).toEqual([true]);
    expect(await tasks.giveBack([{ delivery, counted: false }])).toBe(1);
    expect(await queue.get('d')).toMatchObject({ state: 'scheduled', runAt: expect.any(Number) });
    expect((await claimed(tasks, 'd')).attempt).toBe(1);
  });

  it('counts the attempt of a delivery given back past its deadline; the claim after the last dead-letters it', async () => {
    const tasks = adapter();
    await queue.schedule({ n: 1 }, { id: 'e' });
    let delivery = await claimed(tasks, 'e');
    for (let attempt = 1; attempt < queue.options.maxAttempts; attempt++) {
      expect(delivery.attempt).toBe(attempt);
      expect(await tasks.giveBack([{ delivery, counted: true }])).toBe(1);
      delivery = await claimed(tasks, 'e');
    }
    expect(await tasks.giveBack([{ delivery, counted: true }])).toBe(1);
    await expect(claimed(tasks, 'e')).rejects.toThrow('task e was not claimed');
    expect(await queue.get('e')).toMatchObject({
      attempts: queue.options.maxAttempts,
      lastError: expect.stringContaining('handler past handlerTimeoutMs had not settled when its process shut down'),
    });
    expect(await queue.get('e')).toMatchObject({ state: 'dead' });
    expect(await queue.stats()).toMatchObject({ givenBack: queue.options.maxAttempts, deadTotal: 1 });
  });

  it('composed with the runtime: runs due tasks at most `concurrency` at a time and acknowledges each', async () => {
    let running = 0;
    let most = 0;
    const done: number[] = [];
    const tasks = new DelayConsumerAdapter({
      queue,
      clock: connection.clock,
      label: 'Unit.handle',
      options: options({ concurrency: 2 }),
      handler: async (payload) => {
        most = Math.max(most, ++running);
        await new Promise((resolve) => setTimeout(resolve, 5));
        running--;
        done.push((payload as { n: number }).n);
      },
    });
    const logger = new Logger('test', { timestamp: false });
    const consumer = new ConsumerRuntime({
      queue: 'tasks',
      shards: 2,
      label: 'Unit.handle',
      adapter: tasks,
      reporter: new OutcomeReporter<TaskDelivery>({
        queue: 'tasks',
        reports: tasks.reports,
        label: 'Unit.handle',
        logger,
        events,
      }),
      connection,
      hints: queue.hints,
      concurrency: 2,
      handlerTimeoutMs: 60_000,
      idlePollMs: settings.idlePollMs,
    });
    await consumer.start();
    await Promise.all(Array.from({ length: 10 }, (_, n) => queue.schedule({ n }, { id: `t${n}` })));
    await pollUntil(() => done.length === 10, 'ten tasks');
    expect(most).toBe(2);
    expect(await consumer.stop(1000)).toBe(true);
    expect(await queue.stats()).toMatchObject({ scheduled: 0, active: 0 });
    expect(consumer.status()).toMatchObject({ consumer: 'Unit.handle', running: false, claimed: 10, timedOut: 0 });
  });
});
