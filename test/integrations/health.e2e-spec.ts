import { Controller, Get, Query } from '@nestjs/common';
import { HealthCheck, HealthCheckService, TerminusModule } from '@nestjs/terminus';
import { ScheduleModule } from '@nestjs/schedule';
import { QueueHealthIndicator, QueueInputError, UnknownQueueError } from 'nestjs-redis-queues';
import { CapturedLogs, startRedis, type RedisServer } from '@test/support/faults';
import { recordBatches, recordTasks, useQueueApps } from '@test/support/fixtures';
import { deferred, pollUntil } from '@test/support/testing';

const LIBRARY_VERSION = (require('../../libs/queue/package.json') as { version: string }).version;

// 'digest' is drained only every 30 s, like a periodic report.
const consumers = [
  recordBatches('events').consumer,
  recordTasks('tasks').consumer,
  recordBatches('digest', { intervalMs: 30_000 }).consumer,
];

@Controller('health')
class HealthController {
  constructor(
    private readonly health: HealthCheckService,
    private readonly queues: QueueHealthIndicator,
  ) {}

  @Get()
  @HealthCheck()
  check(@Query('queue') queue?: string) {
    return this.health.check([
      () =>
        this.queues.isHealthy('queues', {
          maxBacklog: 2,
          maxLagMs: 5_000,
          timeoutMs: 500,
          queues: queue ? [queue] : undefined,
        }),
    ]);
  }
}

describe('QueueHealthIndicator (@nestjs/terminus)', () => {
  const harness = useQueueApps();
  let server: RedisServer;

  beforeAll(async () => {
    server = await startRedis();
  });
  afterAll(async () => {
    await server.stop();
  });

  async function start(opts: { consumers?: boolean } = {}) {
    const { app, fixed, delay } = await harness.start({
      connection: server.url,
      root: { idlePollMs: 500, commandTimeoutMs: 1000, consumers: opts.consumers },
      fixed: [
        { name: 'events', shards: 2, maxWaitMs: 20 },
        { name: 'idle', shards: 2, maxWaitMs: 60_000 },
        { name: 'digest', shards: 2, maxWaitMs: 20 },
      ],
      delay: [{ name: 'tasks', shards: 2 }],
      imports: [TerminusModule.forRoot({ logger: false }), ScheduleModule.forRoot()],
      controllers: [HealthController],
      providers: consumers,
      logger: new CapturedLogs(),
    });
    await app.listen(0, '127.0.0.1');
    const base = await app.getUrl();
    return {
      idle: fixed<number>('idle'),
      digest: fixed<number>('digest'),
      events: fixed<number>('events'),
      tasks: delay('tasks'),
      indicator: app.get(QueueHealthIndicator),
      health: async (query = '') => {
        const response = await fetch(`${base}/health${query}`);
        return { status: response.status, body: (await response.json()) as any };
      },
    };
  }

  it('is up with every queue and its consumers, then down with the reason when a backlog passes its limit', async () => {
    const { idle, health } = await start();
    const up = await health();
    expect(up.status).toBe(200);
    expect(up.body.status).toBe('ok');
    expect(up.body.details.queues).toEqual({
      status: 'up',
      redis: 'up',
      evictionPolicy: 'noeviction',
      queues: {
        events: { kind: 'fixed', backlog: 0, lagMs: 0, consumers: 1 },
        idle: { kind: 'fixed', backlog: 0, lagMs: 0, consumers: 0 },
        digest: { kind: 'fixed', backlog: 0, lagMs: 0, consumers: 1, drainedEveryMs: 30_000 },
        tasks: { kind: 'delay', backlog: 0, lagMs: 0, consumers: 1 },
      },
      processes: { versions: { [LIBRARY_VERSION]: 1 }, dataContract: 2 },
      // The consumers' wake-up hints arrive there; it answered at least when it connected.
      subscriber: { state: 'connected', lastReplyAgeMs: expect.any(Number), restarts: 0 },
    });

    await idle.pushMany('g', [1, 2, 3]);
    const down = await health();
    expect(down.status).toBe(503);
    expect(down.body.error.queues).toMatchObject({ status: 'down', redis: 'up', message: 'idle: backlog 3 > 2' });
    // A check limited to other queues is not concerned.
    expect((await health('?queue=events')).status).toBe(200);
  });

  it('is down when a queue waits past maxLagMs', async () => {
    const { indicator, events } = await start({ consumers: false });
    // 'events' has no consumer running here: its group is due after 20 ms and waits on.
    await events.push('g', 1);
    const result = await pollUntil(async () => {
      const checked = await indicator.isHealthy('q', { maxLagMs: 50 });
      return checked.q.status === 'down' ? checked : undefined;
    }, 'the lag to pass 50 ms');
    expect(result.q.message).toMatch(/^events: lag \d+ ms > 50 ms$/);
    expect(result.q.queues!.events.lagMs).toBeGreaterThan(50);
  });

  it('reports a paused queue as up with paused: true, its backlog and lag limits set aside', async () => {
    const { indicator, events } = await start({ consumers: false });
    await events.push('g', 1);
    await events.pause();
    const waited = await pollUntil(async () => {
      const checked = await indicator.isHealthy('q', { maxLagMs: 50, maxBacklog: 0 });
      return checked.q.queues!.events.lagMs > 50 ? checked : undefined;
    }, "'events' to wait past 50 ms");
    expect(waited.q.status).toBe('up');
    expect(waited.q.queues!.events).toMatchObject({ paused: true, backlog: 1 });
    expect(waited.q.queues!.idle.paused).toBeUndefined();
    await events.resume();
    expect((await indicator.isHealthy('q', { maxLagMs: 50, maxBacklog: 0 })).q.status).toBe('down');
  });

  it('reports paused groups by their count, up all the same', async () => {
    const { indicator, events } = await start({ consumers: false });
    await events.pauseGroup('tenant-a');
    await events.pauseGroup('tenant-b');
    const checked = await indicator.isHealthy('q');
    expect(checked.q.status).toBe('up');
    expect(checked.q.queues!.events).toMatchObject({ pausedGroups: 2 });
    expect(checked.q.queues!.idle.pausedGroups).toBeUndefined();
  });

  it('judges a queue drained on a schedule against its period, not the global lag limit', async () => {
    const { indicator, digest } = await start();
    await digest.push('g', 1);
    // Due after 20 ms, drained every 30 s: waiting past maxLagMs is normal there.
    const waited = await pollUntil(async () => {
      const checked = await indicator.isHealthy('q', { maxLagMs: 50 });
      return checked.q.queues!.digest.lagMs > 50 ? checked : undefined;
    }, "'digest' to wait past 50 ms");
    expect(waited.q).toMatchObject({ status: 'up', queues: { digest: { drainedEveryMs: 30_000, backlog: 1 } } });
    // A queue's own limit is held to the same allowance.
    const own = await indicator.isHealthy('q', { maxLagMs: 50, queues: { digest: { maxLagMs: 10 } } });
    expect(own.q.status).toBe('up');
  });

  it('takes limits per queue, the others keeping the top-level ones', async () => {
    const { indicator, idle } = await start();
    await idle.pushMany('g', [1, 2, 3]);
    const global = await indicator.isHealthy('q', { maxBacklog: 2 });
    expect(global.q).toMatchObject({ status: 'down', message: 'idle: backlog 3 > 2' });
    const own = await indicator.isHealthy('q', { maxBacklog: 2, queues: { idle: { maxBacklog: 10 } } });
    expect(own.q.status).toBe('up');
    // Every queue is still checked against the top-level limits.
    const tighter = await indicator.isHealthy('q', { maxBacklog: 0, queues: { idle: { maxBacklog: 3 } } });
    expect(tighter.q.status).toBe('up');
    const others = await indicator.isHealthy('q', { maxBacklog: 2, queues: { events: { maxBacklog: 10 } } });
    expect(others.q).toMatchObject({ status: 'down', message: 'idle: backlog 3 > 2' });
    await expect(indicator.isHealthy('q', { queues: { evnets: { maxLagMs: 1 } } })).rejects.toThrow(UnknownQueueError);
  });

  it('is down, within its timeout, when Redis does not answer', async () => {
    const { health } = await start();
    process.kill(server.pid, 'SIGSTOP'); // frozen, connected: only the timeout can tell
    try {
      const started = Date.now();
      const down = await health();
      expect(Date.now() - started).toBeLessThan(2_000);
      expect(down.status).toBe(503);
      expect(down.body.error.queues).toEqual({
        status: 'down',
        redis: 'down',
        message: 'Redis did not answer: PING took longer than 500 ms',
      });
    } finally {
      process.kill(server.pid, 'SIGCONT');
    }
    await pollUntil(async () => (await health()).status === 200, 'health back once Redis answers');
  });

  it('refuses a queue name that is not registered', async () => {
    const { indicator } = await start();
    await expect(indicator.isHealthy('q', { queues: ['evnets'] })).rejects.toThrow(UnknownQueueError);
  });

  it('refuses misspelt options and limits, naming the ones meant, instead of checking nothing', async () => {
    const { indicator } = await start();
    await expect(indicator.isHealthy('q', { maxLag: 5_000 } as never)).rejects.toThrow(
      new QueueInputError('isHealthy(key, options): maxLag is not an option (did you mean maxLagMs?)'),
    );
    await expect(indicator.isHealthy('q', { queues: { events: { maxbacklog: 3 } } } as never)).rejects.toThrow(
      /^isHealthy\(key, options\): queues\.events\.maxbacklog is not an option \(did you mean queues\.events\.maxBacklog\?\)$/,
    );
    await expect(indicator.isHealthy('q', { timeoutMs: '500' } as never)).rejects.toThrow(
      /timeoutMs must be a number \(got "500", a string\)/,
    );
    await expect(indicator.isHealthy('q', { queues: { events: 5 } } as never)).rejects.toThrow(
      /queues\.events: expected an options object \{ maxBacklog\?, maxLagMs\?, dataLoss\? \}, got 5/,
    );
    await expect(indicator.isHealthy('q', { queues: { events: { dataLoss: 'down' } } } as never)).rejects.toThrow(
      /queues\.events\.dataLoss must be 'warn' or 'fail'/,
    );
    await expect(indicator.isHealthy('q', { queues: [5] } as never)).rejects.toThrow(/queues must be queue names/);
    expect(
      (await indicator.isHealthy('q', { maxLagMs: 60_000, queues: { events: { maxBacklog: 10 } } })).q.status,
    ).toBe('up');
  });

  it('after a restart that lost the data: down until each record is written again, then up and reporting the loss until acknowledged', async () => {
    const { health, indicator, idle, digest, events, tasks } = await start();
    const queues = [events, idle, digest, tasks];
    // The records are checked once the connection is ready: held, to see health meanwhile.
    const gate = deferred();
    const restores = queues.map(({ record }) => {
      const restore = record.restore.bind(record);
      return jest.spyOn(record, 'restore').mockImplementation(async () => {
        await gate.promise;
        return restore();
      });
    });
    try {
      const { port } = server;
      await server.kill('SIGKILL');
      server = await startRedis({ port });
      const missing = await pollUntil(async () => {
        const checked = await health();
        return checked.body.error?.queues.redis === 'up' ? checked : undefined;
      }, 'Redis to answer');
      expect(missing.status).toBe(503);
      for (const name of ['events', 'idle', 'digest', 'tasks'])
        expect(missing.body.error.queues.message).toContain(`${name}: its record is missing in Redis`);
    } finally {
      gate.resolve();
    }
    const back = await pollUntil(async () => {
      const checked = await health();
      return checked.status === 200 ? checked : undefined;
    }, 'health up once the records are written again');
    expect(restores.every((spy) => spy.mock.calls.length > 0)).toBe(true);
    for (const name of ['events', 'idle', 'digest', 'tasks'])
      expect(back.body.details.queues.warning).toMatch(new RegExp(`(^|; )${name}: its data was lost`));
    expect(back.body.details.queues.queues.tasks.dataLostAt).toEqual(expect.any(Number));
    const strict = await indicator.isHealthy('q', { dataLoss: 'fail' });
    expect(strict.q).toMatchObject({ status: 'down', message: expect.stringMatching(/^events: its data was lost/) });
    for (const queue of queues) expect(await queue.acknowledgeDataLoss()).toBe(true);
    const acknowledged = await health();
    expect(acknowledged.status).toBe(200);
    expect(acknowledged.body.details.queues.warning).toBeUndefined();
    expect((await indicator.isHealthy('q', { dataLoss: 'fail' })).q.status).toBe('up');
  });

  // Last: the server does not come back.
  it('is down when Redis is gone, saying it could not be reached rather than that it did not answer', async () => {
    const { health } = await start();
    await server.stop();
    const down = await health();
    expect(down.status).toBe(503);
    expect(down.body.error.queues).toMatchObject({
      status: 'down',
      redis: 'down',
      message: expect.stringMatching(/^Redis could not be reached: /),
    });
    // Once the client has tried to connect again, the reason is the refusal, in the library's words.
    const refused = await pollUntil(async () => {
      const { message } = (await health()).body.error.queues;
      return /connection refused/.test(message) && message;
    }, 'the refusal as the reason');
    expect(refused).toBe(
      `Redis could not be reached: not connected: connection refused at 127.0.0.1:${server.port} (no Redis listening there)`,
    );
  });
});
