import IORedis from 'ioredis';
import { recordBatches, recordTasks, useQueueApps } from '@test/support/fixtures';
import { startRedis, type RedisServer } from '@test/support/faults';
import { pollUntil } from '@test/support/testing';

const batches = recordBatches<{ n: number }>('events');
const tasks = recordTasks<{ n: number }>('timers');

/**
 * Idle consumers sleep up to idlePollMs (a minute by default) and rely on pub/sub hints to wake for
 * new work. A hint published while the subscriber connection is down is lost: once it is subscribed
 * again, every consumer looks for itself.
 */
describe('wake-up hints lost while the subscriber reconnects', () => {
  const harness = useQueueApps();
  let server: RedisServer;
  let admin: IORedis;

  beforeAll(async () => {
    server = await startRedis();
    admin = new IORedis(server.url);
  });
  afterAll(async () => {
    await admin.quit();
    await server.stop();
  });

  it('work pushed or scheduled meanwhile is handed out once it is back, not a minute later', async () => {
    const { fixed, delay, prefix } = await harness.start({
      connection: server.url,
      fixed: [{ name: 'events', shards: 2, maxWaitMs: 0 }],
      delay: [{ name: 'timers', shards: 2 }],
      providers: [batches.consumer, tasks.consumer],
    });
    // Both consumers polled at start and are asleep until a hint, or the default idlePollMs.
    await fixed('events').push('warm', { n: 0 });
    await batches.untilMessages(1);
    const subscribed = async () => ((await admin.pubsub('NUMSUB', `${prefix}:events:wake`)) as [string, number])[1];

    // Until a push and a schedule are made while nobody listens (the subscriber may come back fast).
    let lost = 0;
    for (let attempt = 1; attempt <= 5 && lost === 0; attempt++) {
      expect(await admin.client('KILL', 'TYPE', 'pubsub')).toBeGreaterThan(0);
      await fixed('events').push(`g${attempt}`, { n: attempt });
      await delay('timers').schedule({ n: attempt }, { id: `t${attempt}` });
      if ((await subscribed()) === 0) lost = attempt;
    }
    expect(lost).toBeGreaterThan(0);
    await pollUntil(async () => (await subscribed()) > 0, 'the subscriber to be back', 10_000);
    await batches.untilMessages(1 + lost, 5_000);
    await tasks.untilTasks(lost, 5_000);
  });

  it('a hint for a time one was sent for before the connection dropped still goes out: Redis may have lost that work', async () => {
    const { delay, prefix } = await harness.start({
      connection: server.url,
      delay: [{ name: 'timers', shards: 1 }],
      providers: [tasks.consumer],
    });
    const subscribed = async () => ((await admin.pubsub('NUMSUB', `${prefix}:timers:wake`)) as [string, number])[1];
    const scriptsRun = async () =>
      Number(/cmdstat_evalsha:calls=(\d+)/.exec(await admin.info('commandstats'))?.[1] ?? 0);
    await pollUntil(async () => (await subscribed()) > 0, 'the consumer to listen');
    // A hint for its time goes out; then Redis loses the task (as a restart without persistence would)
    // and the connection it went out on drops.
    await delay('timers').schedule({ n: 1 }, { id: 'lost', delayMs: 4000 });
    await admin.flushall();
    expect(await admin.client('KILL', 'TYPE', 'normal', 'SKIPME', 'yes')).toBeGreaterThan(0);
    await pollUntil(
      () =>
        delay('timers')
          .get('lost')
          .then(
            () => true,
            () => false,
          ),
      'the connection to be back',
    );
    // The subscriber reconnecting makes the consumer look at once: it finds nothing and sleeps a minute.
    const before = await scriptsRun();
    expect(await admin.client('KILL', 'TYPE', 'pubsub')).toBeGreaterThan(0);
    await pollUntil(async () => (await subscribed()) > 0 && (await scriptsRun()) > before, 'the consumer to look');
    // Scheduled while the first hint's time is still ahead: skipping this hint as covered by that one
    // would leave the task to the consumer's next look, a minute away.
    await delay('timers').schedule({ n: 2 }, { id: 'again', delayMs: 4000 });
    await tasks.untilTasks(1, 8_000);
    expect(tasks.ids()).toEqual(['again']);
  });
});
