import IORedis from 'ioredis';
import { recordBatches, recordTasks, useQueueApps } from '@test/support/fixtures';
import { startRedis, type RedisServer } from '@test/support/faults';
import { RedisProxy } from '@test/support/redis-proxy';
import { pollUntil } from '@test/support/testing';

/**
 * A write retried within `retryMs` is applied at most once. A Redis busy for longer than the 3 s a
 * command connection may stay silent (a DEBUG SLEEP, as a long script of another client) runs the tries
 * it had received once it is free, after the connection that sent them was replaced: their replies are
 * lost, and each of those calls is tried again. The task of a schedule applied that way may run and
 * complete before its retry arrives; the retry must not create it again, nor store a push twice.
 */
describe('retried writes', () => {
  const harness = useQueueApps();
  const servers: RedisServer[] = [];
  const proxies: RedisProxy[] = [];
  const ran = recordTasks<{ n: number }>('tasks');
  const delivered = recordBatches<number>('events');

  afterEach(async () => {
    await Promise.all(proxies.splice(0).map((proxy) => proxy.stop()));
    await Promise.all(servers.splice(0).map((server) => server.stop()));
  });

  it('a retry that arrives after its first try was applied and its task ran writes nothing', async () => {
    const redis = await startRedis();
    servers.push(redis);
    const proxy = new RedisProxy(redis.port);
    proxies.push(proxy);
    await proxy.start();
    const prefix = harness.prefix();
    const queues = {
      fixed: [{ name: 'events', shards: 2, maxWaitMs: 0 }],
      delay: [{ name: 'tasks', shards: 2 }],
    };
    // The producer's replies go through the proxy; the consumers, on a path of their own, see each write at once.
    const producer = await harness.start({
      ...queues,
      prefix,
      connection: `redis://127.0.0.1:${proxy.port}`,
      root: { consumers: false, startup: 'fail' },
    });
    // They poll often: the producer's wake-up hints follow replies that do not come.
    await harness.start({
      ...queues,
      prefix,
      connection: redis.url,
      root: { idlePollMs: 100 },
      providers: [ran.consumer, delivered.consumer],
    });
    const tasks = producer.delay<{ n: number }>('tasks');
    const events = producer.fixed<number>('events');
    // Each script the calls run is loaded first: a NOSCRIPT reply held back would keep a call from Redis.
    await tasks.schedule({ n: 0 }, { id: 'later', delayMs: 60_000 });
    await tasks.shift('later', 0);
    await events.push('g', 0);
    await delivered.untilMessages(1);
    const { runAt } = (await tasks.get('later'))!;

    proxy.hold();
    const connections = proxy.commandConnections;
    const calls = Promise.all([
      tasks.schedule({ n: 1 }, { id: 'now', retryMs: 10_000 }),
      events.push('g', 1, { retryMs: 10_000 }),
      events.pushMany('g', [2, 3], { retryMs: 10_000 }),
      tasks.shift('later', 1000, { retryMs: 10_000 }),
    ]);
    await ran.untilTasks(1);
    await delivered.untilMessages(4);
    // Its replies lost, the producer drops the connection after 3 s of silence and sends the calls again
    // on a new one, whose replies come through.
    await pollUntil(() => proxy.commandConnections > connections, 'the silent connection replaced', 10_000);
    proxy.release();
    const [scheduled, pushed, pushedMany, shifted] = await calls;

    expect(scheduled).toEqual({ id: 'now', runAt: expect.any(Number), changed: true });
    expect(pushed).toEqual({ dropped: 0 });
    expect(pushedMany).toEqual({ dropped: 0 });
    expect(shifted).toEqual({ id: 'later', runAt: runAt + 1000 });
    expect(await tasks.get('later')).toMatchObject({ runAt: runAt + 1000 });
    expect(await tasks.get('now')).toBeNull();
    expect(await tasks.stats()).toMatchObject({ scheduledTotal: 2, completed: 1, scheduled: 1 });
    expect(await events.stats()).toMatchObject({ pushed: 4, pending: 0 });
    expect(ran.ids()).toEqual(['now']);
    expect(delivered.messages().sort()).toEqual([0, 1, 2, 3]);
  });

  it('runs each schedule with an id and delivers each push once, none lost (DEBUG SLEEP 4.5 s)', async () => {
    const redis = await startRedis({ extraArgs: ['--enable-debug-command', 'local'] });
    servers.push(redis);
    const app = await harness.start({
      connection: redis.url,
      root: { startup: 'fail' },
      // At least once, so that a claim whose reply the sleep lost is delivered again, not lost: a
      // message stored twice is then one delivered at attempt 1 twice.
      fixed: [{ name: 'events', shards: 2, maxWaitMs: 0, delivery: 'at-least-once', capacity: 100_000 }],
      delay: [{ name: 'tasks', shards: 2 }],
      providers: [ran.consumer, delivered.consumer],
    });
    const tasks = app.delay<{ n: number }>('tasks');
    const events = app.fixed<number>('events');
    const scheduled = new Map<string, Promise<unknown>>();
    const pushed = new Map<number, Promise<unknown>>();
    let n = 0;
    // A schedule due now and a push every 20 ms, before, during and after the sleep.
    const traffic = setInterval(() => {
      const i = n++;
      scheduled.set(`t${i}`, tasks.schedule({ n: i }, { id: `t${i}`, retryMs: 10_000 }));
      pushed.set(i, events.push(`g${i % 8}`, i, { retryMs: 10_000 }));
    }, 20);
    const sleeper = new IORedis(redis.url);
    try {
      await pollUntil(() => n >= 25, 'traffic before the sleep');
      await sleeper.call('DEBUG', 'SLEEP', '4.5');
      const after = n;
      await pollUntil(() => n >= after + 50, 'traffic after the sleep', 10_000);
    } finally {
      clearInterval(traffic);
      sleeper.disconnect();
    }

    const outcomes = await Promise.allSettled([...scheduled.values(), ...pushed.values()]);
    expect(outcomes.filter(({ status }) => status === 'rejected')).toEqual([]);
    await pollUntil(
      async () => {
        const [taskStats, eventStats] = await Promise.all([tasks.stats(), events.stats()]);
        return taskStats.scheduled + taskStats.active === 0 && eventStats.pending === 0;
      },
      'every task run and every message acknowledged',
      30_000,
    );

    const firstRuns = new Map<string, number>();
    for (const { id, ctx } of ran.tasks) if (ctx.attempt === 1) firstRuns.set(id, (firstRuns.get(id) ?? 0) + 1);
    const firstDeliveries = new Map<number, number>();
    for (const { messages, ctx } of delivered.batches)
      if (ctx.attempt === 1) for (const m of messages) firstDeliveries.set(m, (firstDeliveries.get(m) ?? 0) + 1);
    const ranTwice = [...firstRuns].filter(([, runs]) => runs > 1).map(([id]) => id);
    const notRun = [...scheduled.keys()].filter((id) => !ran.tasks.some((task) => task.id === id));
    const deliveredTwice = [...firstDeliveries].filter(([, times]) => times > 1).map(([m]) => m);
    const lost = [...pushed.keys()].filter((m) => !delivered.messages().includes(m));
    process.stdout.write(
      `DEBUG SLEEP 4.5 s under ${n} schedules and ${n} pushes with retryMs: ` +
        `${ranTwice.length} ran twice, ${notRun.length} never ran; ${deliveredTwice.length} delivered twice, ${lost.length} lost; ` +
        `connection restarts visible as ${ran.tasks.filter(({ ctx }) => ctx.attempt > 1).length} task redeliveries\n`,
    );
    expect({ ranTwice, notRun, deliveredTwice, lost }).toEqual({
      ranTwice: [],
      notRun: [],
      deliveredTwice: [],
      lost: [],
    });
  });
});
