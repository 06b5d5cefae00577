import IORedis from 'ioredis';
import { QueueConsumers } from 'nestjs-redis-queues';
import { recordBatches, recordTasks, useQueueApps, type QueueApp } from '@test/support/fixtures';
import { CapturedLogs, startRedis, type RedisServer } from '@test/support/faults';
import { RedisProxy } from '@test/support/redis-proxy';
import { pollUntil, uniquePrefix } from '@test/support/testing';

const LEASE_MS = 500;
const GROUP = 'lapsed-group';

const late = { batches: recordBatches<{ n: number }>('events'), tasks: recordTasks<{ n: number }>('timers') };
const other = { batches: recordBatches<{ n: number }>('events'), tasks: recordTasks<{ n: number }>('timers') };

/**
 * A process that gets what it claimed only after the claim's lease ran out does not run it: another
 * consumer took it over meanwhile, and running it too would run it beside (or after) that one, out of
 * the order and the one-at-a-time an ordered at-least-once queue or a task promises.
 */
describe('a delivery whose lease ran out before its handler could start', () => {
  const harness = useQueueApps();
  // A server of its own: a long script of another suite on the shared one would hold a reply back past
  // the moment the proxy starts holding them, and the app behind it would wait on it.
  let server: RedisServer;
  let proxy: RedisProxy;
  let admin: IORedis;
  const serverTime = async () => {
    const [seconds, micros] = await admin.time();
    return Number(seconds) * 1000 + Math.floor(Number(micros) / 1000);
  };

  beforeAll(async () => {
    server = await startRedis();
    proxy = new RedisProxy(server.port);
    await proxy.start();
    admin = new IORedis(server.url);
  });
  afterAll(async () => {
    admin.disconnect();
    await proxy.stop();
    await server.stop();
  });

  /** A consumer app behind the proxy, and another on Redis directly, on one prefix; the other's consumers held. */
  async function start(kind: 'fixed' | 'delay') {
    const prefix = uniquePrefix('lapse');
    // One shard: a poll of another shard, its reply held too, would keep the slot the claim needs.
    const queues =
      kind === 'fixed'
        ? {
            fixed: [{ name: 'events', shards: 1, delivery: 'at-least-once' as const, maxWaitMs: 0, leaseMs: LEASE_MS }],
          }
        : { delay: [{ name: 'timers', shards: 1, leaseMs: LEASE_MS }] };
    const logs = new CapturedLogs();
    const behind: QueueApp = await harness.start({
      connection: `redis://127.0.0.1:${proxy.port}`,
      prefix,
      ...queues,
      providers: [kind === 'fixed' ? late.batches.consumer : late.tasks.consumer],
      logger: logs,
    });
    // Nest's logger is one per process, the last application's: both log there.
    const direct = await harness.start({
      connection: server.url,
      prefix,
      ...queues,
      providers: [kind === 'fixed' ? other.batches.consumer : other.tasks.consumer],
      logger: logs,
    });
    const queue = kind === 'fixed' ? 'events' : 'timers';
    for (const { app } of [behind, direct]) app.get(QueueConsumers).pauseConsumers(queue);
    // Nothing of the app behind the proxy on its way (a poll whose reply would be held too).
    await pollUntil(() => proxy.quietFor(300), 'the app behind the proxy to be quiet');
    // An ordered FixedQueue's poll lists the due groups, and the next one claims them: held from that
    // script call, the first to name the group. A DelayQueue's poll claims.
    proxy.hold(kind === 'fixed' ? new RegExp(`\r\nevalsha\r\n[^]*\r\n${GROUP}\r\n`) : undefined);
    return {
      behind,
      direct,
      logs,
      /**
       * Lets the app behind the proxy claim, then, once it did, the other; resolves once the held claim's
       * lease ended a second ago by Redis' clock (the app behind the proxy estimates that clock from
       * below, by up to a slow reply's delay: it must see the lease over for sure).
       */
      resume: async (claimed: () => Promise<boolean>, delivered: () => Promise<void>) => {
        behind.app.get(QueueConsumers).resumeConsumers(queue);
        await pollUntil(claimed, 'the claim of the app behind the proxy');
        const claimedBy = await serverTime();
        direct.app.get(QueueConsumers).resumeConsumers(queue);
        await delivered();
        await pollUntil(async () => (await serverTime()) > claimedBy + LEASE_MS + 1000, 'the lease long over');
      },
    };
  }

  afterEach(() => proxy.release());

  it('FixedQueue, at least once: the batch is delivered once, by the consumer that took it over', async () => {
    const { direct, logs, resume } = await start('fixed');
    const events = direct.fixed<{ n: number }>('events');
    await events.push(GROUP, { n: 1 });
    // Claimed by the app behind the proxy, which does not see the reply; taken over once its lease ran out.
    await resume(
      async () => (await events.stats()).active === 1,
      () => other.batches.untilMessages(1, 5_000),
    );
    proxy.release();
    await pollUntil(
      () =>
        late.batches.batches.length > 0 ||
        logs.find('warn', /did not start the batch of group "lapsed-group"/).length > 0,
      'the late reply handled',
    );
    expect(late.batches.batches).toEqual([]);
    await pollUntil(async () => (await events.stats()).delivered === 1, 'the batch acknowledged');
    expect(other.batches.messages()).toEqual([{ n: 1 }]);
  });

  it('DelayQueue: the task runs once, by the consumer that took it over', async () => {
    const { direct, logs, resume } = await start('delay');
    const timers = direct.delay<{ n: number }>('timers');
    await timers.schedule({ n: 1 }, { id: 't' });
    await resume(
      async () => (await timers.stats()).active === 1,
      () => other.tasks.untilTasks(1, 5_000),
    );
    proxy.release();
    await pollUntil(
      () => late.tasks.tasks.length > 0 || logs.find('warn', /did not start the task "t"/).length > 0,
      'the late reply handled',
    );
    expect(late.tasks.tasks).toEqual([]);
    expect(other.tasks.ids()).toEqual(['t']);
  });
});
