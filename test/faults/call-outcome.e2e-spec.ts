import type { INestApplication } from '@nestjs/common';
import IORedis, { type RedisOptions } from 'ioredis';
import {
  DelayQueue,
  FixedQueue,
  getDelayQueueToken,
  getFixedQueueToken,
  QueueConnectionError,
  QueueModule,
  type QueueModuleOptions,
} from 'nestjs-redis-queues';
import { pollUntil, uniquePrefix } from '@test/support/testing';
import { CapturedLogs, createLoggedApp, freePort, startRedis, timed, type RedisServer } from '@test/support/faults';

// What a QueueConnectionError says about its call: `not-sent` only when the call cannot have reached
// Redis, `unknown` (and "may or may not have been applied") whenever Redis may have run it.
describe('QueueConnectionError.outcome', () => {
  const apps: INestApplication[] = [];
  const servers: RedisServer[] = [];
  const clients: IORedis[] = [];

  afterEach(async () => {
    await Promise.all(apps.splice(0).map((app) => app.close()));
    await Promise.all(servers.splice(0).map((server) => server.stop()));
    for (const client of clients.splice(0)) client.disconnect();
  });

  async function boot(connection: QueueModuleOptions['connection'], options: Partial<QueueModuleOptions> = {}) {
    const app = await createLoggedApp(
      {
        imports: [
          QueueModule.forRoot({
            connection,
            prefix: uniquePrefix(),
            consumers: false,
            startup: 'continue',
            ...options,
          }),
          QueueModule.registerFixedQueue({ name: 'events', shards: 2 }),
          QueueModule.registerDelayQueue({ name: 'tasks', shards: 2 }),
        ],
      },
      new CapturedLogs(),
    );
    apps.push(app);
    return {
      events: app.get<FixedQueue<string>>(getFixedQueueToken('events')),
      tasks: app.get<DelayQueue>(getDelayQueueToken('tasks')),
    };
  }

  function ownClient(options: RedisOptions): IORedis {
    const client = new IORedis(options);
    client.on('error', () => undefined);
    clients.push(client);
    return client;
  }

  async function failures(queues: Awaited<ReturnType<typeof boot>>) {
    const calls = await Promise.all([
      timed(queues.events.push('g', 'lost')),
      timed(queues.events.pushMany('g', ['a', 'b'])),
      timed(queues.tasks.schedule({}, { id: 'lost' })),
      timed(queues.tasks.cancel('lost')),
    ]);
    for (const call of calls) expect(call.error).toBeInstanceOf(QueueConnectionError);
    return calls.map((call) => call.error as QueueConnectionError);
  }

  function expectNotSent(errors: QueueConnectionError[]) {
    for (const error of errors) {
      expect(error.outcome).toBe('not-sent');
      expect(error.message).toMatch(/; the call was not sent, so nothing was applied$/);
      expect(error.message).not.toMatch(/may or may not/);
    }
  }

  it('is not-sent when Redis refuses connections (the module-owned connection), and nothing is applied later', async () => {
    const port = await freePort();
    const queues = await boot(`redis://127.0.0.1:${port}`, { commandTimeoutMs: 1000 });
    expectNotSent(await failures(queues));

    const server = await startRedis({ port });
    servers.push(server);
    await pollUntil(
      () =>
        queues.events.size('g').then(
          (size) => size === 0,
          () => false,
        ),
      'Redis to answer',
    );
    expect(await queues.tasks.get('lost')).toBeNull();
  });

  it("is not-sent when the user's client gives up at maxRetriesPerRequest while Redis is away", async () => {
    const port = await freePort();
    const client = ownClient({ port, host: '127.0.0.1', maxRetriesPerRequest: 1, retryStrategy: () => 50 });
    expectNotSent(await failures(await boot(client)));
  });

  it("is not-sent when the user's client has its offline queue disabled", async () => {
    const port = await freePort();
    const client = ownClient({ port, host: '127.0.0.1', enableOfflineQueue: false, retryStrategy: () => 50 });
    const errors = await failures(await boot(client));
    expectNotSent(errors);
    expect(String((errors[0].cause as Error).message)).toMatch(/enableOfflineQueue options is false/);
  });

  it('is unknown when the server stops answering after the call was sent (SIGSTOP)', async () => {
    const server = await startRedis();
    servers.push(server);
    const { events, tasks } = await boot(server.url, { commandTimeoutMs: 500, startup: 'fail' });
    await events.push('g', 'before');
    process.kill(server.pid, 'SIGSTOP');
    try {
      const calls = await Promise.all([
        timed(events.push('g', 'stopped')),
        timed(tasks.schedule({}, { id: 'stopped' })),
      ]);
      for (const { error } of calls) {
        expect(error).toBeInstanceOf(QueueConnectionError);
        expect((error as QueueConnectionError).outcome).toBe('unknown');
        expect((error as Error).message).toMatch(/the call may or may not have been applied$/);
      }
    } finally {
      process.kill(server.pid, 'SIGCONT');
    }
  });

  it('is unknown when the connection drops after the call was sent, though ioredis reports maxRetriesPerRequest', async () => {
    const server = await startRedis();
    servers.push(server);
    const client = ownClient({ port: server.port, host: '127.0.0.1', maxRetriesPerRequest: 0, commandTimeout: 10_000 });
    const { tasks } = await boot(client, { startup: 'fail' });
    await tasks.schedule({}, { id: 'before' });
    process.kill(server.pid, 'SIGSTOP');
    const call = timed(tasks.schedule({}, { id: 'in-flight' }));
    // Written to the socket, awaiting its reply: the kernel takes the bytes although Redis is stopped.
    const pending = client as unknown as { commandQueue: { length: number } };
    await pollUntil(() => pending.commandQueue.length > 0, 'the call to be sent');
    await server.kill('SIGKILL');
    const { error } = await call;
    expect(error).toBeInstanceOf(QueueConnectionError);
    expect(((error as Error).cause as Error).message).toMatch(/max retries per request/);
    expect((error as QueueConnectionError).outcome).toBe('unknown');
    expect((error as Error).message).toMatch(/may or may not have been applied$/);
  });
});
