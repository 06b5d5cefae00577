import { Injectable } from '@nestjs/common';
import IORedis from 'ioredis';
import { Registry } from 'prom-client';
import {
  QueueEvents,
  QueueHealthIndicator,
  QueueMetricsModule,
  type QueueDataLostEvent,
  type QueueReconciledEvent,
  type SourcedTask,
  TaskSource,
} from 'nestjs-redis-queues';
import { HOUR, Meal } from '@test/support/meals';
import { CapturedLogs, freePort, startRedis, type RedisServer } from '@test/support/faults';
import { recordTasks, startQueueApp, type QueueApp } from '@test/support/fixtures';
import { pollUntil, redisUrl, uniquePrefix } from '@test/support/testing';
import { useWorkerProcesses } from '@test/support/worker-processes';

/** The application's records: what each test says the queue should hold. */
let rows: SourcedTask<Meal | Record<string, unknown>>[] = [];
/** How many times each app's source was listed. */
const listedBy = new Map<number, number>();
/** When set, each listing waits for it before its first row: a pass under way. */
let hold: Promise<void> | undefined;

function sourceOf(app: number) {
  @Injectable()
  class Meals {
    @TaskSource('meals')
    async *meals() {
      listedBy.set(app, (listedBy.get(app) ?? 0) + 1);
      await hold;
      for (const row of rows) yield row;
    }
  }
  return Meals;
}

function mealRows(count: number): SourcedTask<Meal>[] {
  return Array.from({ length: count }, (_, i) => ({ id: `meal:${i}`, delayMs: HOUR + i, payload: { grams: i } }));
}

describe('@TaskSource: a DelayQueue rebuilt from the application records', () => {
  let server: RedisServer | undefined;
  const apps: QueueApp[] = [];
  const clients: IORedis[] = [];

  afterEach(async () => {
    rows = [];
    hold = undefined;
    listedBy.clear();
    await Promise.all(apps.splice(0).map(({ app }) => app.close()));
    for (const client of clients.splice(0)) client.disconnect();
    await server?.stop();
    server = undefined;
  });

  async function start(
    url: string,
    app: number,
    {
      logger,
      root = {},
      reconcile,
      source = true,
      providers = [],
      registry,
    }: {
      logger?: CapturedLogs;
      registry?: Registry;
      root?: object;
      reconcile?: object;
      source?: boolean;
      providers?: never[];
    } = {},
  ) {
    const started = await startQueueApp({
      connection: url,
      prefix: 'ts',
      root: { idlePollMs: 60_000, commandTimeoutMs: 1000, ...root },
      delay: [{ name: 'meals', shards: 4, schema: Meal, ...(reconcile && { reconcile }) }],
      fixed: [{ name: 'events' }],
      providers: [...(source ? [sourceOf(app)] : []), ...providers],
      imports: registry ? [QueueMetricsModule.register({ registry })] : [],
      logger,
    });
    apps.push(started);
    return started;
  }

  function client(url: string): IORedis {
    const redis = new IORedis(url);
    clients.push(redis);
    return redis;
  }

  async function scheduledIds(redis: IORedis): Promise<string[]> {
    const ids = await Promise.all([0, 1, 2, 3].map((shard) => redis.zrange(`ts:{meals:${shard}}:due`, 0, -1)));
    return ids.flat().sort();
  }

  it('lists its source on a first start, once across two applications', async () => {
    server = await startRedis();
    rows = mealRows(50);
    const [a] = await Promise.all([start(server.url, 1), start(server.url, 2)]);
    const redis = client(server.url);
    await pollUntil(async () => (await scheduledIds(redis)).length === 50, 'every listed task scheduled');
    const lastPass = await pollUntil(async () => (await a.delay('meals').record.state()).lastPass, 'the pass');
    expect((listedBy.get(1) ?? 0) + (listedBy.get(2) ?? 0)).toBe(1);
    expect(lastPass).toMatchObject({ trigger: 'record-created', listed: 50, restored: 50, kept: 0, swept: 0 });
  });

  it('rebuilds the queue after FLUSHALL once across two applications, and reports the loss until then', async () => {
    server = await startRedis();
    rows = mealRows(200);
    const logs = [new CapturedLogs(), new CapturedLogs()];
    const [a, b] = await Promise.all([
      start(server.url, 1, { logger: logs[0] }),
      start(server.url, 2, { logger: logs[1] }),
    ]);
    const redis = client(server.url);
    await pollUntil(async () => (await a.delay('meals').record.state()).lastPass, 'the first pass');
    listedBy.clear();
    const lost: QueueDataLostEvent[] = [];
    const reconciled: QueueReconciledEvent[] = [];
    for (const { app } of [a, b]) {
      app.get(QueueEvents).on('queue.data-lost', (event) => lost.push(event));
      app.get(QueueEvents).on('queue.reconciled', (event) => reconciled.push(event));
    }
    await redis.flushall();
    const flushedAt = Date.now();
    // Checked every 15 s without a reconnection.
    await pollUntil(async () => (await scheduledIds(redis)).length === 200, 'every task back', 25_000);
    const backMs = Date.now() - flushedAt;
    expect(backMs).toBeLessThan(20_000);
    expect(await a.delay('meals').get('meal:7')).toMatchObject({ state: 'scheduled', payload: { grams: 7 } });
    // The first pass emits its event just after storing lastPass, so on a busy machine that event can still
    // arrive after the listeners were added: only the passes after the flush count.
    const afterFlush = () => reconciled.filter((event) => event.trigger !== 'record-created');
    await pollUntil(() => afterFlush().length === 1, 'the pass reported');
    expect((listedBy.get(1) ?? 0) + (listedBy.get(2) ?? 0)).toBe(1);
    expect(afterFlush()).toEqual([
      expect.objectContaining({ queue: 'meals', trigger: 'data-lost', listed: 200, restored: 200 }),
    ]);
    expect(lost).toContainEqual({ queue: 'meals', kind: 'delay', restoring: true });
    expect(lost).toContainEqual({ queue: 'events', kind: 'fixed', restoring: false });
    const said = logs.flatMap((log) => log.find('error', /Queue "events": its record was missing .*data was lost/));
    expect(said[0]).toMatch(/acknowledgeDataLoss\(\)/);
    // The DelayQueue was rebuilt: nothing to report; the FixedQueue's messages are gone: reported until
    // acknowledged, up (its record is back, so it works) unless dataLoss: 'fail'.
    const health = a.app.get(QueueHealthIndicator);
    const reported = (await health.isHealthy('queues')).queues;
    expect(reported.status).toBe('up');
    expect(reported.warning).toMatch(/events: its data was lost/);
    expect(reported.warning).not.toMatch(/meals: its data was lost/);
    expect(reported.queues!.events.dataLostAt).toEqual(expect.any(Number));
    expect(reported.queues!.meals.lastReconcile).toMatchObject({ trigger: 'data-lost', restored: 200 });
    const down = (await health.isHealthy('queues', { dataLoss: 'fail' })).queues;
    expect(down.status).toBe('down');
    expect(down.message).toMatch(/events: its data was lost/);
    expect(await b.fixed('events').acknowledgeDataLoss()).toBe(true);
    const acknowledged = (await health.isHealthy('queues', { dataLoss: 'fail' })).queues;
    expect(acknowledged).toMatchObject({ status: 'up' });
    expect(acknowledged.warning).toBeUndefined();
    expect(acknowledged.queues!.events.dataLostAt).toBeUndefined();
  });

  it('rebuilds the queue after a restart without persistence, within seconds of the reconnection', async () => {
    server = await startRedis();
    const { port } = server;
    rows = mealRows(500);
    const a = await start(server.url, 1);
    let redis = client(server.url);
    await pollUntil(async () => (await scheduledIds(redis)).length === 500, 'the first pass');
    await server.kill('SIGKILL');
    server = await startRedis({ port });
    const restartedAt = Date.now();
    redis = client(server.url);
    await pollUntil(async () => (await scheduledIds(redis)).length === 500, 'every task back', 15_000);
    expect(Date.now() - restartedAt).toBeLessThan(10_000);
    expect(await a.delay('meals').get('meal:499')).toMatchObject({ state: 'scheduled' });
  });

  it('without a task source, a lost DelayQueue stays reported until reconcile() or an acknowledgement, in health and metrics', async () => {
    server = await startRedis();
    const logs = new CapturedLogs();
    const registry = new Registry();
    const a = await start(server.url, 1, { source: false, logger: logs, registry });
    await a.delay('meals').schedule({ grams: 1 }, { id: 'meal:1', delayMs: HOUR });
    const redis = client(server.url);
    await redis.flushall();
    const health = a.app.get(QueueHealthIndicator);
    const reported = await pollUntil(
      async () => {
        const result = (await health.isHealthy('queues')).queues;
        return /meals: its data was lost/.test(String(result.warning)) ? result : undefined;
      },
      'the loss reported',
      25_000,
    );
    expect(reported.status).toBe('up');
    expect(reported.queues!.meals).toMatchObject({ dataLostAt: expect.any(Number), taskSourceLive: false });
    expect(reported.warning).toMatch(/meals: .*no live process has a @TaskSource\('meals'\)/);
    // Held to its own rule: down for the queue that asks for it only.
    const down = (await health.isHealthy('queues', { queues: { meals: { dataLoss: 'fail' } } })).queues;
    expect(down.status).toBe('down');
    expect(down.message).toMatch(/^meals: its data was lost.*no live process has a @TaskSource\('meals'\)/);
    expect(down.warning).toMatch(/^events: its data was lost/);
    const unacknowledged = async () => {
      const { values } = await registry.getSingleMetric('nrq_data_loss_unacknowledged')!.get();
      return values.map(({ labels, value }) => [labels.queue, value]).sort();
    };
    expect(await unacknowledged()).toEqual([
      ['events', 1],
      ['meals', 1],
    ]);
    expect(logs.find('error', /Queue "meals".*A pass of its task source is owed.*@TaskSource\('meals'\)/)).toHaveLength(
      1,
    );
    const { values } = await registry.getSingleMetric('nrq_data_lost_total')!.get();
    expect(values.map(({ labels, value }) => [labels.queue, value]).sort()).toEqual([
      ['events', 1],
      ['meals', 1],
    ]);
    await expect(a.delay('meals').reconcile()).rejects.toThrow(/has no task source.*@TaskSource\('meals'\)/);
    expect(await a.delay('meals').acknowledgeDataLoss()).toBe(true);
    expect(await a.fixed('events').acknowledgeDataLoss()).toBe(true);
    expect((await health.isHealthy('queues', { dataLoss: 'fail' })).queues.status).toBe('up');
    // A scrape reads Redis at most every 250 ms.
    await pollUntil(
      async () =>
        JSON.stringify(await unacknowledged()) ===
        JSON.stringify([
          ['events', 0],
          ['meals', 0],
        ]),
      'the gauge at 0 for both queues',
    );
  });

  it('keeps health down in a producer-only app while the pass a loss owes runs in the app with the source', async () => {
    server = await startRedis();
    rows = mealRows(30);
    const worker = await start(server.url, 1);
    await pollUntil(async () => (await worker.delay('meals').record.state()).lastPass, 'the first pass');
    const producer = await start(server.url, 2, { source: false, root: { consumers: false } });
    let release!: () => void;
    hold = new Promise((resolve) => (release = resolve));
    const redis = client(server.url);
    await redis.flushall();
    // The producer finds the losses (what its round of checks calls, for each queue), as an API pod
    // beside the workers would.
    expect(await producer.delay('meals').record.restore()).toBe('lost');
    expect(await producer.fixed('events').record.restore()).toBe('lost');
    const health = producer.app.get(QueueHealthIndicator);
    const down = await pollUntil(
      async () => {
        const result = (await health.isHealthy('queues')).queues;
        return result.queues?.meals.taskSourceLive ? result : undefined;
      },
      'the live source seen',
      10_000,
    );
    expect(down.status).toBe('down');
    // Down for the pass owed; the loss itself is a warning (the queue works again).
    expect(down.message).toMatch(/^meals: a pass of its @TaskSource is owed since .* \(data-lost\)/);
    expect(down.warning).toMatch(/meals: its data was lost .*the pass of its @TaskSource owed since then rebuilds it/);
    expect(down.queues!.meals.passOwedAt).toEqual(expect.any(Number));
    expect(listedBy.get(1)).toBe(2);
    release();
    await pollUntil(async () => (await scheduledIds(redis)).length === 30, 'every task back');
    await pollUntil(
      async () => (await health.isHealthy('queues')).queues.queues?.meals.passOwedAt === undefined,
      'settled',
    );
    const up = (await health.isHealthy('queues')).queues;
    expect(up.message ?? '').not.toMatch(/meals/);
    expect(up.queues!.meals.lastReconcile).toMatchObject({ trigger: 'data-lost', restored: 30 });
  });

  it('writes the tasks of schedules that gave up once Redis answers again: a pass is owed', async () => {
    server = await startRedis();
    const eater = recordTasks<Meal>('meals');
    // The periodic pass, every 10 s, was what wrote them before.
    const a = await start(server.url, 1, { providers: [eater.consumer as never], reconcile: { everyMs: 10_000 } });
    await pollUntil(async () => (await a.delay('meals').record.state()).lastPass, 'the first pass');
    const dueAt = Date.now() + 500;
    rows = Array.from({ length: 10 }, (_, i) => ({ id: `pet:${i}`, runAt: dueAt, payload: { grams: i } }));
    process.kill(server.pid, 'SIGSTOP');
    const gaveUp = await Promise.all(
      rows.map(({ id, runAt, payload }) =>
        a
          .delay('meals')
          .schedule(payload as Meal, { id, runAt, retryMs: 1500 })
          .then(
            () => 'taken',
            (error: unknown) => (error as { outcome?: string }).outcome,
          ),
      ),
    );
    expect(new Set(gaveUp)).toEqual(new Set(['unknown']));
    process.kill(server.pid, 'SIGCONT');
    const resumedAt = Date.now();
    await eater.untilTasks(10, 20_000);
    const late = eater.tasks.map((task) => task.ctx.firedAt - dueAt);
    const afterResume = Math.max(...eater.tasks.map((task) => task.at)) - resumedAt;
    process.stdout.write(
      `pets after a give-up: ${late.length} fired, ${Math.min(...late)}-${Math.max(...late)} ms late, ` +
        `the last ${afterResume} ms after Redis answered again\n`,
    );
    expect(afterResume).toBeLessThan(1500);
    expect((await a.delay('meals').record.state()).owed).toBeUndefined();
  });

  it('writes a schedule that gave up over a running task as its successor: it runs once, after the running one', async () => {
    const persistence = { appendonly: true, extraArgs: ['--appendfsync', 'always'] };
    server = await startRedis(persistence);
    const { port, dir } = server;
    let release!: () => void;
    const released = new Promise<void>((resolve) => (release = resolve));
    let running = 0;
    let most = 0;
    const eater = recordTasks<Meal>('meals', {}, async (meal) => {
      most = Math.max(most, ++running);
      if (meal.grams === 1) await released;
      running--;
    });
    const a = await start(server.url, 1, { providers: [eater.consumer as never], root: { idlePollMs: 100 } });
    const queue = a.delay('meals');
    await pollUntil(async () => (await queue.record.state()).lastPass, 'the first pass');
    await queue.schedule({ grams: 1 }, { id: 'fed', delayMs: 0 });
    await eater.untilTasks(1);
    // The record changed while its task ran; the write of it gives up while Redis is down: nothing reaches it.
    rows = [{ id: 'fed', delayMs: 0, payload: { grams: 2 } }];
    await server.kill('SIGKILL');
    const gaveUp = await queue.schedule({ grams: 2 }, { id: 'fed', delayMs: 0, retryMs: 500 }).then(
      () => 'applied',
      (error: unknown) => (error as { outcome?: string }).outcome,
    );
    expect(gaveUp).toMatch(/^(not-sent|unknown)$/);
    server = await startRedis({ port, dir, ...persistence });
    await pollUntil(async () => {
      const state = await queue.record.state();
      return state.owed === undefined && state.lastPass?.trigger === 'write-failed';
    }, 'the owed pass');
    // Written as the records say, it waits for the running delivery.
    expect(await queue.get('fed')).toMatchObject({ state: 'active', payload: { grams: 2 } });
    expect(eater.tasks).toHaveLength(1);
    release();
    await eater.untilTasks(2);
    await pollUntil(async () => {
      const { scheduled, active } = await queue.stats();
      return scheduled === 0 && active === 0;
    }, 'every task run');
    expect(eater.tasks.map((task) => task.payload)).toEqual([{ grams: 1 }, { grams: 2 }]);
    expect(most).toBe(1);
  });

  it('applies a reschedule, a schedule of an existing id and a cancel that gave up, as the records say', async () => {
    const persistence = { appendonly: true, extraArgs: ['--appendfsync', 'always'] };
    server = await startRedis(persistence);
    const { port, dir } = server;
    const a = await start(server.url, 1);
    const queue = a.delay('meals');
    await pollUntil(async () => (await queue.record.state()).lastPass, 'the first pass');
    const at = Date.now() + HOUR;
    for (const id of ['moved', 'fed', 'gone']) await queue.schedule({ grams: 1 }, { id, runAt: at });
    // The records, committed before the calls that give up while Redis is down: nothing reaches it.
    rows = [
      { id: 'moved', runAt: at + HOUR, payload: { grams: 1 } },
      { id: 'fed', runAt: at + 2 * HOUR, payload: { grams: 2 } },
    ];
    await server.kill('SIGKILL');
    const outcome = (call: Promise<unknown>) =>
      call.then(
        () => 'applied',
        (error: unknown) => (error as { outcome?: string }).outcome,
      );
    const outcomes = await Promise.all([
      outcome(queue.reschedule('moved', { runAt: at + HOUR, retryMs: 500 })),
      outcome(queue.schedule({ grams: 2 }, { id: 'fed', runAt: at + 2 * HOUR, retryMs: 500 })),
      outcome(queue.cancel('gone', { retryMs: 500 })),
    ]);
    // Each gave up: 'unknown' when a first try went out before the client saw the connection close.
    for (const given of outcomes) expect(given).toMatch(/^(not-sent|unknown)$/);
    server = await startRedis({ port, dir, ...persistence });
    const answered = Date.now();
    await pollUntil(async () => {
      const state = await queue.record.state();
      return state.owed === undefined && state.lastPass?.trigger === 'write-failed';
    }, 'the owed pass');
    expect(await queue.get('moved')).toMatchObject({ runAt: at + HOUR });
    expect(await queue.get('fed')).toMatchObject({ runAt: at + 2 * HOUR, payload: { grams: 2 } });
    expect(await queue.get('gone')).toBeNull();
    process.stdout.write(
      `writes that gave up applied by the owed pass ${Date.now() - answered} ms after Redis answered\n`,
    );
  });

  it("starts with startup: 'continue' while Redis is down, and lists its source once Redis is up", async () => {
    const port = await freePort();
    rows = mealRows(20);
    await start(`redis://127.0.0.1:${port}`, 1, { root: { startup: 'continue' } });
    server = await startRedis({ port });
    const redis = client(server.url);
    await pollUntil(async () => (await scheduledIds(redis)).length === 20, 'every task scheduled', 20_000);
  });
});

describe('@TaskSource across two OS processes', () => {
  const workers = useWorkerProcesses();
  let server: RedisServer | undefined;
  const clients: IORedis[] = [];

  afterEach(async () => {
    for (const client of clients.splice(0)) client.disconnect();
    await server?.stop();
    server = undefined;
  });

  it('rebuilds the queue once after FLUSHALL and after a restart without persistence', async () => {
    server = await startRedis();
    const { port } = server;
    const logKey = `${uniquePrefix('tsw')}:log`;
    const log = new IORedis(redisUrl());
    clients.push(log);
    const env = workers.env({ QUEUE_URL: server.url, LOG_KEY: logKey, ROWS: '10000' });
    await Promise.all([workers.spawn('task-source-worker.js', env), workers.spawn('task-source-worker.js', env)]);
    let redis = new IORedis(server.url);
    clients.push(redis);
    const count = async () => {
      const sizes = await Promise.all([0, 1, 2, 3].map((shard) => redis.zcard(`tsw:{meals:${shard}}:due`)));
      return sizes.reduce((sum, size) => sum + size, 0);
    };
    await pollUntil(async () => (await count()) === 10_000, 'the first pass', 30_000);
    expect(await log.llen(logKey)).toBe(1);

    await redis.flushall();
    const flushedAt = Date.now();
    await pollUntil(async () => (await count()) === 10_000, 'every task back after FLUSHALL', 40_000);
    const afterFlush = Date.now() - flushedAt;
    expect(await log.llen(logKey)).toBe(2);

    await server.kill('SIGKILL');
    server = await startRedis({ port });
    const restartedAt = Date.now();
    redis = new IORedis(server.url);
    clients.push(redis);
    await pollUntil(async () => (await count()) === 10_000, 'every task back after the restart', 30_000);
    const afterRestart = Date.now() - restartedAt;
    expect(await log.llen(logKey)).toBe(3);
    await log.del(logKey);
    // The figures of the guarantees page: the loss is seen within 15 s of a FLUSHALL, at once on a reconnection.
    process.stdout.write(`10,000 tasks back ${afterFlush} ms after FLUSHALL, ${afterRestart} ms after a restart\n`);
  });

  describe('with producer-only processes beside the one with the source', () => {
    const ROWS = 200;
    let redis: IORedis;
    let log: IORedis;
    let logKey: string;
    let env: NodeJS.ProcessEnv;

    beforeEach(async () => {
      log = new IORedis(redisUrl());
      clients.push(log);
      server = await startRedis();
      redis = new IORedis(server.url);
      clients.push(redis);
      logKey = `${uniquePrefix('tsw')}:log`;
      env = workers.env({ QUEUE_URL: server.url, LOG_KEY: logKey, ROWS: String(ROWS) });
    });

    afterEach(async () => {
      await log.del(logKey);
    });

    const count = async () => {
      const sizes = await Promise.all([0, 1, 2, 3].map((shard) => redis.zcard(`tsw:{meals:${shard}}:due`)));
      return sizes.reduce((sum, size) => sum + size, 0);
    };
    const producers = () =>
      Promise.all([workers.spawn('task-source-producer.js', env), workers.spawn('task-source-producer.js', env)]);

    it('gives a first deployment its timers when the producers start first', async () => {
      await producers();
      expect(await redis.hget('tsw:{meals}:meta', 'owed')).toMatch(/^\d+:record-created$/);
      await workers.spawn('task-source-worker.js', env);
      const startedAt = Date.now();
      await pollUntil(async () => (await count()) === ROWS, 'every timer', 20_000);
      const backMs = Date.now() - startedAt;
      await pollUntil(async () => (await redis.hget('tsw:{meals}:meta', 'owed')) === null, 'the pass settled');
      process.stdout.write(
        `first start, producers first: ${ROWS} of ${ROWS} timers ${backMs} ms after the worker was ready\n`,
      );
    });

    it('takes over the pass owed when the process running it dies', async () => {
      await producers();
      // The first worker's pass never ends: it is killed while its database is still answering.
      const first = await workers.spawn('task-source-worker.js', { ...env, LIST_DELAY_MS: '120000' });
      await pollUntil(async () => (await log.llen(logKey)) === 1, 'the first worker listing');
      await workers.spawn('task-source-worker.js', env);
      expect(await log.llen(logKey)).toBe(1);
      await workers.stop(first, 'SIGKILL');
      expect(await count()).toBe(0);
      const killedAt = Date.now();
      await pollUntil(async () => (await count()) === ROWS, 'every timer', 30_000);
      const backMs = Date.now() - killedAt;
      const pids = (await log.lrange(logKey, 0, -1)).map((line) => line.split('|')[1]);
      expect(pids).toEqual([String(first.pid), expect.not.stringMatching(`^${first.pid}$`)]);
      await pollUntil(async () => (await redis.hget('tsw:{meals}:meta', 'owed')) === null, 'the pass settled');
      // Its lease (10 s) ran out, and the other process looked again (every 3 s).
      process.stdout.write(`owed pass taken over: ${ROWS} of ${ROWS} timers ${backMs} ms after its runner died\n`);
    });

    it('runs the pass owed within about a second when a producer re-creates the record', async () => {
      await workers.spawn('task-source-worker.js', env);
      await pollUntil(async () => (await count()) === ROWS, 'the first pass', 20_000);
      await redis.flushall();
      // A producer that starts now creates the record, as one that found it gone would: the worker learns
      // it from the pass owed, announced at once.
      await workers.spawn('task-source-producer.js', env);
      const createdAt = Date.now();
      await pollUntil(async () => (await count()) === ROWS, 'every timer back', 10_000);
      const backMs = Date.now() - createdAt;
      expect(backMs).toBeLessThan(3000);
      expect(await log.llen(logKey)).toBe(2);
      process.stdout.write(`record re-created by a producer: ${ROWS} of ${ROWS} timers back in ${backMs} ms\n`);
    });

    it('runs the pass owed after a loss a producer found, in the process with the source', async () => {
      const worker = await workers.spawn('task-source-worker.js', env);
      await producers();
      await pollUntil(async () => (await count()) === ROWS, 'the first pass', 20_000);
      // Frozen, the worker cannot find the loss first: a producer does, on its reconnection.
      process.kill(worker.pid!, 'SIGSTOP');
      const { port } = server!;
      await server!.kill('SIGKILL');
      server = await startRedis({ port });
      redis = new IORedis(server.url);
      clients.push(redis);
      await pollUntil(async () => (await redis.hget('tsw:{meals}:meta', 'lostAt')) !== null, 'the loss found', 15_000);
      expect(await redis.hget('tsw:{meals}:meta', 'owed')).toMatch(/^\d+:data-lost$/);
      const resumedAt = Date.now();
      process.kill(worker.pid!, 'SIGCONT');
      await pollUntil(async () => (await count()) === ROWS, 'every timer back', 20_000);
      const backMs = Date.now() - resumedAt;
      await pollUntil(async () => (await redis.hget('tsw:{meals}:meta', 'lostAt')) === null, 'the loss settled');
      expect(await log.llen(logKey)).toBe(2);
      process.stdout.write(
        `loss found by a producer: ${ROWS} of ${ROWS} timers back ${backMs} ms after the worker resumed\n`,
      );
    });
  });
});
