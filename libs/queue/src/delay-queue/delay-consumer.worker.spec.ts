import { Logger } from '@nestjs/common';
import { randomBytes } from 'node:crypto';
import { ConsumerRegistry } from '../consumer/consumer.registry';
import { QueueEvents } from '../events/queue-events';
import { QueueSettings } from '../queue.settings';
import { QueueKeys } from '../redis/keys';
import { RedisConnection } from '../redis/redis-connection';
import { DelayConsumerWorker, type DelayHandler } from './delay-consumer.worker';
import { DelayConsumerOptionsRules, resolveOptions } from '../validation/queue-options';
import { DelayQueue } from './delay-queue';
import { pollUntil } from '../../../../test/support/testing';

/**
 * The consumer unit alone, against the real redis-server of the test run (REDIS_URL): built from a
 * connection, a queue's name and options, no Nest application around it.
 */
describe('DelayConsumerWorker (a consumer unit, on real Redis)', () => {
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
    queue = new DelayQueue({ name: 'tasks', shards: 2 }, connection, settings, events, new ConsumerRegistry());
    await queue.onModuleInit();
  });

  afterEach(async () => {
    await queue.obliterate({ force: true });
    await connection.onApplicationShutdown();
  });

  function consumer(handler: DelayHandler) {
    return new DelayConsumerWorker({
      connection,
      events,
      logger: new Logger('test', { timestamp: false }),
      queue: 'tasks',
      shards: 2,
      keys: new QueueKeys(settings.prefix, 'tasks', 2),
      hints: queue.hints,
      label: 'Unit.handle',
      idlePollMs: settings.idlePollMs,
      queueOptions: queue.options,
      options: resolveOptions(DelayConsumerOptionsRules, { concurrency: 2 }, 'Unit.handle'),
      handler,
    });
  }

  it('runs due tasks at most `concurrency` at a time and acknowledges each', async () => {
    let running = 0;
    let most = 0;
    const done: number[] = [];
    const worker = consumer(async (payload) => {
      most = Math.max(most, ++running);
      await new Promise((resolve) => setTimeout(resolve, 5));
      running--;
      done.push((payload as { n: number }).n);
    });
    await worker.start();
    await Promise.all(Array.from({ length: 10 }, (_, n) => queue.schedule({ n }, { id: `t${n}` })));
    await pollUntil(() => done.length === 10, 'ten tasks');
    expect(most).toBe(2);
    expect(await worker.stop(1000)).toBe(true);
    expect(await queue.stats()).toMatchObject({ scheduled: 0, active: 0 });
    expect(worker.status()).toMatchObject({ consumer: 'Unit.handle', running: false, claimed: 10, timedOut: 0 });
  });

  it('stop() abandons a handler that outlives the timeout and gives its task back at once', async () => {
    let signal: AbortSignal | undefined;
    const worker = consumer((_payload, ctx) => {
      signal = ctx.signal;
      return new Promise(() => undefined);
    });
    await worker.start();
    await queue.schedule({ n: 1 }, { id: 'hung' });
    await pollUntil(() => signal !== undefined, 'the hung handler');
    expect(await worker.stop(100)).toBe(false);
    expect(signal!.aborted).toBe(true);
    expect(await queue.get('hung')).toMatchObject({ state: 'scheduled' });
  });

  it('hold() stops claiming until release()', async () => {
    const done: string[] = [];
    const worker = consumer((_payload, ctx) => void done.push(ctx.id));
    worker.hold();
    await worker.start();
    await queue.schedule({ n: 1 }, { id: 'later' });
    await new Promise((resolve) => setTimeout(resolve, 300));
    expect(worker.status().claims).toBe(0);
    worker.release();
    await pollUntil(() => done.length === 1, 'the task after release()');
    await worker.stop(1000);
  });
});
