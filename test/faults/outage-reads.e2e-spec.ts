import { Injectable } from '@nestjs/common';
import {
  QueueConnectionError,
  QueueDashboardModule,
  Recurring,
  RecurringSchedules,
  TaskSource,
} from 'nestjs-redis-queues';
import { CapturedLogs, startRedis, type RedisServer } from '@test/support/faults';
import { useQueueApps } from '@test/support/fixtures';

@Injectable()
class Pets {
  @TaskSource('meals')
  async *meals() {
    yield { id: 'meal:1', delayMs: 3_600_000, payload: {} };
  }

  @Recurring({ everyMs: 60_000 })
  async digest() {}
}

describe('Reads while Redis is down', () => {
  const harness = useQueueApps();
  let server: RedisServer | undefined;

  afterEach(async () => {
    await server?.stop();
    server = undefined;
  });

  async function start() {
    server = await startRedis();
    const started = await harness.start({
      connection: server.url,
      root: { idlePollMs: 200, commandTimeoutMs: 1000 },
      fixed: [{ name: 'events', shards: 2 }],
      delay: [{ name: 'meals', shards: 2, reconcile: { everyMs: 60_000 } }],
      providers: [Pets],
      imports: [QueueDashboardModule.register({ path: 'queues' })],
      logger: new CapturedLogs(),
    });
    await started.app.listen(0, '127.0.0.1');
    const base = (await started.app.getUrl()).replace('[::1]', '127.0.0.1');
    return { ...started, base };
  }

  it("answers the dashboard's API with 503 and stays up, every schedule's read handled", async () => {
    const { app, base } = await start();
    expect((await fetch(`${base}/queues/api`)).status).toBe(200);
    await server!.kill('SIGKILL');

    const response = await fetch(`${base}/queues/api`);
    expect(response.status).toBe(503);
    // 'unknown' when a read went out on the socket before its close was seen.
    expect(await response.json()).toMatchObject({
      error: 'Service Unavailable',
      message: expect.stringMatching(/^Redis (could not be reached|did not answer)/),
      outcome: expect.stringMatching(/^(not-sent|unknown)$/),
    });
    // The overview's read of the schedules was sent before this one, so it has failed by the time this has:
    // the suite's environment fails it if that rejection went unhandled.
    await expect(app.get(RecurringSchedules).list()).rejects.toThrow(QueueConnectionError);
  });
});
