import IORedis from 'ioredis';
import { QueueConfigError, QueueConnectionError, type QueueModuleOptions } from 'nestjs-redis-queues';
import { recordBatches, recordTasks, useQueueApps } from '@test/support/fixtures';
import { pollUntil, resolves, uniquePrefix } from '@test/support/testing';
import { CapturedLogs, freePort, startRedis, timed, type RedisServer } from '@test/support/faults';

const taskLog = recordTasks('tasks', { concurrency: 4 });
const eventLog = recordBatches<string>('events', { concurrency: 2 });

const fixed = [{ name: 'events', shards: 2, batchSize: 8, maxWaitMs: 20 }];
const delay = [{ name: 'tasks', shards: 2, leaseMs: 1000 }];

describe('Redis unreachable', () => {
  const harness = useQueueApps();
  const servers: RedisServer[] = [];

  afterEach(async () => {
    await Promise.all(servers.splice(0).map((server) => server.stop()));
  });
  async function boot(options: QueueModuleOptions, logs: CapturedLogs, consumers = true) {
    const { connection, ...root } = options;
    const app = await harness.start({
      connection,
      root: { idlePollMs: 200, ...root },
      fixed,
      delay,
      providers: consumers ? [taskLog.consumer, eventLog.consumer] : [],
      logger: logs,
    });
    return { app, events: app.fixed<string>('events'), tasks: app.delay('tasks') };
  }

  it('fails start-up by default, saying where and why, without the password', async () => {
    const port = await freePort();
    const logs = new CapturedLogs();
    const { ms, error } = await timed(boot({ connection: `redis://app:s3cret@127.0.0.1:${port}` }, logs));
    expect(error).toBeInstanceOf(QueueConnectionError);
    // Nothing of the application was sent: its callers may start again as if it never ran.
    expect((error as QueueConnectionError).outcome).toBe('not-sent');
    const message = (error as Error).message;
    expect(message).toMatch(
      new RegExp(
        `Cannot reach Redis at redis://app:\\*\\*\\*@127\\.0\\.0\\.1:${port}/? \\(connection refused at 127\\.0\\.0\\.1:${port} \\(no Redis listening there\\)\\).*startup: 'fail'`,
      ),
    );
    expect(message).not.toContain('s3cret');
    expect(logs.find('error', /Cannot reach Redis/)).toEqual([message]);
    expect(ms).toBeLessThan(3_000);
  });

  it('validates the start-up and timeout options', async () => {
    const logs = new CapturedLogs();
    const bad = boot({ connection: 'redis://127.0.0.1:1', startup: 'later' as 'fail', commandTimeoutMs: 5 }, logs);
    await expect(bad).rejects.toThrow(QueueConfigError);
    await expect(bad).rejects.toThrow(/commandTimeoutMs must be an integer between 100 and 600000 \(got 5\)/);
    await expect(bad).rejects.toThrow(/startup must be one of the following values: fail, continue/);
  });

  it("starts with startup: 'continue', rejects calls in bounded time while Redis is away, and recovers when it comes", async () => {
    const port = await freePort();
    const logs = new CapturedLogs();
    const started = await timed(
      boot({ connection: `redis://127.0.0.1:${port}`, startup: 'continue', commandTimeoutMs: 1000 }, logs),
    );
    expect(started.error).toBeUndefined();
    expect(started.ms).toBeLessThan(3_000);
    const { events, tasks } = started.value!;
    expect(
      logs.find(
        'warn',
        /unreachable at start-up \(connection refused at 127\.0\.0\.1:\d+ \(no Redis listening there\)\).*startup: 'continue'/,
      ),
    ).toHaveLength(1);

    // Many calls while Redis is away: each rejects on its own, none waits for Redis to come back.
    const attempts = await Promise.all([
      ...Array.from({ length: 500 }, (_, i) => timed(events.push(`g${i % 7}`, `lost-${i}`))),
      ...Array.from({ length: 500 }, (_, i) => timed(tasks.schedule({ i }, { id: `lost-${i}` }))),
    ]);
    expect(attempts.every((attempt) => attempt.error instanceof QueueConnectionError)).toBe(true);
    expect(Math.max(...attempts.map((attempt) => attempt.ms))).toBeLessThan(3_000);

    const server = await startRedis({ port });
    servers.push(server);
    const back = Date.now();
    await pollUntil(() => resolves(() => events.push('g1', 'after')), 'a push to succeed once Redis is up');
    await tasks.schedule({ n: 1 }, { id: 'after' });
    await pollUntil(
      () => taskLog.ids().includes('after') && eventLog.messages().includes('after'),
      'consumers to work again',
      10_000,
    );
    expect(Date.now() - back).toBeLessThan(10_000);
    // Nothing that was rejected was applied later behind the caller's back.
    expect(eventLog.messages()).toEqual(['after']);
    expect(await tasks.stats()).toMatchObject({ scheduledTotal: 1 });
    // The shard-count check that could not run at start-up ran once Redis answered.
    const raw = new IORedis(server.url);
    try {
      const metas = await raw.keys('*:meta');
      const recorded = await Promise.all(metas.map((key) => raw.hgetall(key)));
      expect(recorded).toEqual(
        expect.arrayContaining([
          { kind: 'fixed', shards: '2', layout: '2' },
          // With the pass its creation owes to a task source (none here: it waits for one to start).
          { kind: 'delay', shards: '2', layout: '2', owed: expect.stringMatching(/^\d+:record-created$/) },
        ]),
      );
    } finally {
      raw.disconnect();
    }
    expect(logs.find('log', /connected again/).length).toBeGreaterThan(0);
  });

  it("logs a shard-count mismatch found once Redis comes back after a 'continue' start", async () => {
    const port = await freePort();
    const prefix = uniquePrefix();
    let server = await startRedis({ port, appendonly: true, extraArgs: ['--appendfsync', 'always'] });
    const raw = new IORedis(server.url);
    await raw.hset(`${prefix}:{tasks}:meta`, 'kind', 'delay', 'shards', '5');
    raw.disconnect();
    await server.kill('SIGKILL');

    const logs = new CapturedLogs();
    await harness.start({
      connection: server.url,
      prefix,
      root: { startup: 'continue' },
      delay: [{ name: 'tasks', shards: 2 }],
      logger: logs,
    });
    server = await startRedis({ port, dir: server.dir, appendonly: true });
    servers.push(server);
    const found = await pollUntil(
      () => logs.find('error', /Queue "tasks" was created with 5 shards but is configured with 2/)[0],
      'the mismatch log',
    );
    expect(found).toMatch(/Keep shards: 5/);
  });

  it('rejects calls to a hung Redis after commandTimeoutMs, then works again when it resumes', async () => {
    const server = await startRedis();
    servers.push(server);
    const logs = new CapturedLogs();
    const { events, tasks } = await boot({ connection: server.url, commandTimeoutMs: 500 }, logs, false);
    await events.push('g', 'before');
    process.kill(server.pid, 'SIGSTOP');
    try {
      const push = await timed(events.push('g', 'while-stopped'));
      const schedule = await timed(tasks.schedule({}, { id: 'while-stopped' }));
      for (const call of [push, schedule]) {
        expect(call.error).toBeInstanceOf(QueueConnectionError);
        expect((call.error as Error).message).toMatch(
          /^Redis did not answer \(timed out waiting for the reply\); the call may or may not have been applied$/,
        );
        expect(call.ms).toBeGreaterThanOrEqual(450);
        expect(call.ms).toBeLessThan(1_500);
      }
    } finally {
      process.kill(server.pid, 'SIGCONT');
    }
    await pollUntil(() => resolves(() => events.push('g', 'after')), 'a push after the server resumed');
    expect(await events.size('g')).toBeGreaterThanOrEqual(2);
  });
});
