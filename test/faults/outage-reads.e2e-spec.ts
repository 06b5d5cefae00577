import { Controller, Get, Header, Injectable } from '@nestjs/common';
import { HealthCheck, HealthCheckService, TerminusModule } from '@nestjs/terminus';
import { Registry } from 'prom-client';
import {
  QueueClock,
  QueueConnectionError,
  QueueDashboardModule,
  QueueHealthIndicator,
  QueueMetricsModule,
  Recurring,
  RecurringSchedules,
  TaskSource,
} from 'nestjs-redis-queues';
import { CapturedLogs, startRedis, timed, type RedisServer } from '@test/support/faults';
import { useQueueApps } from '@test/support/fixtures';
import { pollUntil } from '@test/support/testing';

@Injectable()
class Pets {
  @TaskSource('meals')
  async *meals() {
    yield { id: 'meal:1', delayMs: 3_600_000, payload: {} };
  }

  // Once a year: it never runs within a test, so its last run is only ever what the dashboard infers.
  @Recurring({ cron: '0 0 1 1 *' })
  async digest() {}
}

const registry = new Registry();

@Controller()
class Probes {
  constructor(
    private readonly health: HealthCheckService,
    private readonly queues: QueueHealthIndicator,
  ) {}

  @Get('health')
  @HealthCheck()
  check() {
    return this.health.check([() => this.queues.isHealthy('queues', { timeoutMs: 500 })]);
  }

  @Get('metrics')
  @Header('Content-Type', 'text/plain')
  metrics() {
    return registry.metrics();
  }
}

/** Bounded by the command timeout (1 s) with room for a loaded machine, never by Redis coming back. */
const SETTLED_WITHIN_MS = 3_000;

describe('Reads while Redis is down', () => {
  const harness = useQueueApps();
  let server: RedisServer | undefined;

  afterEach(async () => {
    registry.resetMetrics();
    await server?.stop();
    server = undefined;
  });

  async function start() {
    server = await startRedis();
    const started = await harness.start({
      connection: server.url,
      root: { idlePollMs: 200, commandTimeoutMs: 1000 },
      fixed: [{ name: 'events', shards: 2, delivery: 'at-least-once' }],
      delay: [{ name: 'meals', shards: 2, reconcile: { everyMs: 60_000 } }],
      providers: [Pets],
      controllers: [Probes],
      imports: [
        QueueDashboardModule.register({ path: 'queues' }),
        QueueMetricsModule.register({ registry }),
        TerminusModule.forRoot({ logger: false }),
      ],
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

  it('answers every public read, the dashboard, /health and /metrics with a result or a typed error', async () => {
    const { app, base, fixed, delay } = await start();
    const events = fixed('events');
    const meals = delay('meals');
    await events.push('g', { n: 1 });
    await pollUntil(async () => (await meals.get('meal:1')) !== null, 'the task source to list its meal');
    expect((await fetch(`${base}/health`)).status).toBe(200);
    await server!.kill('SIGKILL');

    const clock = app.get(QueueClock);
    const schedules = app.get(RecurringSchedules);
    const reads: Record<string, () => Promise<unknown>> = {
      'FixedQueue.size': () => events.size('g'),
      'FixedQueue.stats': () => events.stats(),
      'FixedQueue.hottestGroups': () => events.hottestGroups(),
      'FixedQueue.deadLetters(limit)': () => events.deadLetters(10),
      'FixedQueue.deadLetters(page)': () => events.deadLetters({ limit: 10 }),
      'FixedQueue.peek': () => events.peek('g'),
      'FixedQueue.groups': () => events.groups(),
      'FixedQueue.pausedGroups': () => events.pausedGroups(),
      'FixedQueue.isPaused': () => events.isPaused(),
      'DelayQueue.get': () => meals.get('meal:1'),
      'DelayQueue.stats': () => meals.stats(),
      'DelayQueue.upcoming': () => meals.upcoming(),
      'DelayQueue.list(scheduled)': () => meals.list('scheduled'),
      'DelayQueue.list(active)': () => meals.list('active'),
      'DelayQueue.list(dead)': () => meals.list('dead'),
      'DelayQueue.deadLetters(limit)': () => meals.deadLetters(10),
      'DelayQueue.deadLetters(page)': () => meals.deadLetters({ limit: 10 }),
      'DelayQueue.repeats': () => meals.repeats(),
      'DelayQueue.isPaused': () => meals.isPaused(),
      'RecurringSchedules.list': () => schedules.list(),
    };
    const settled = await Promise.all(
      Object.entries(reads).map(async ([call, read]) => ({ call, ...(await timed(read())) })),
    );
    for (const { call, error, ms } of settled) {
      expect({ call, error }).toEqual({ call, error: expect.any(QueueConnectionError) });
      expect(ms).toBeLessThan(SETTLED_WITHIN_MS);
    }
    // Whatever QueueClock reads its time from, it answers or says Redis is away.
    const now = await timed(clock.now());
    expect(now.error === undefined ? typeof now.value : now.error).toEqual(
      now.error === undefined ? 'number' : expect.any(QueueConnectionError),
    );
    // What reads no Redis answers from this process.
    expect(meals.shard('meal:1')).toBeGreaterThanOrEqual(0);
    expect([...schedules.declared().keys()].sort()).toEqual(['Pets.digest', 'reconcile.meals']);

    const http = async (path: string) => {
      const started = Date.now();
      const response = await fetch(`${base}${path}`);
      return { path, status: response.status, body: await response.text(), ms: Date.now() - started };
    };
    const [health, metrics, page, api, dead, head] = await Promise.all([
      http('/health'),
      http('/metrics'),
      http('/queues'),
      http('/queues/api'),
      // A cursor as the queue makes them: both shards from their newest dead task.
      http(`/queues/api/delay/meals/dead?cursor=${Buffer.from('[["inf",0],["inf",0]]').toString('base64url')}`),
      http('/queues/api/fixed/events/groups/g/head'),
    ]);
    expect(health.status).toBe(503);
    expect(JSON.parse(health.body)).toMatchObject({ status: 'error', error: { queues: { status: 'down' } } });
    // The gauges read from Redis are left out of the scrape; the counters of this process are all there.
    expect(metrics.status).toBe(200);
    expect(metrics.body).toMatch(/^nrq_messages_pushed_total\{queue="events"\} 1$/m);
    expect(metrics.body).toContain('# TYPE nrq_messages_pending gauge');
    expect(metrics.body).not.toMatch(/^nrq_messages_pending\{/m);
    // The page is served, its script saying why it shows nothing; each of its API calls is a 503.
    expect(page.status).toBe(200);
    expect(page.body).toContain('connecting…');
    for (const answer of [api, dead, head]) {
      expect({ path: answer.path, status: answer.status }).toEqual({ path: answer.path, status: 503 });
      expect(JSON.parse(answer.body).message).toMatch(/^Redis (could not be reached|did not answer)/);
    }
    for (const answer of [health, metrics, page, api, dead, head]) expect(answer.ms).toBeLessThan(SETTLED_WITHIN_MS);
  });

  it("shows a schedule's last run as unknown, not never, once Redis came back without its data", async () => {
    const { base } = await start();
    const digest = async () => {
      const response = await fetch(`${base}/queues/api`);
      if (response.status !== 200) return undefined;
      const { schedules } = (await response.json()) as { schedules: Record<string, unknown>[] };
      return schedules.find(({ name }) => name === 'Pets.digest');
    };
    const before = await digest();
    expect(before).toMatchObject({ name: 'Pets.digest' });
    expect(before).not.toHaveProperty('lastRunAt');
    expect(before).not.toHaveProperty('lastRunLostAt');
    expect(await (await fetch(`${base}/queues`)).text()).toMatch(
      /data-schedule="Pets.digest">.*<td class="tight">never<\/td>/,
    );

    const { port } = server!;
    await server!.kill('SIGKILL');
    server = await startRedis({ port });
    // Declared again with no run recorded, while the loss of the queues' data is reported.
    const after = await pollUntil(
      async () => {
        const shown = await digest();
        return shown?.lastRunLostAt !== undefined && shown;
      },
      "the schedule's run reported lost",
      25_000,
    );
    expect(after).not.toHaveProperty('lastRunAt');
    expect(await (await fetch(`${base}/queues`)).text()).toMatch(
      /data-schedule="Pets.digest">.*<td class="tight">unknown: data lost [^<]+ ago<\/td>/,
    );
  });
});
