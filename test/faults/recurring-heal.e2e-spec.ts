import { Injectable } from '@nestjs/common';
import IORedis from 'ioredis';
import { Registry } from 'prom-client';
import {
  QueueEvents,
  QueueHealthIndicator,
  QueueMetricsModule,
  Recurring,
  type RecurringContext,
  RecurringSchedules,
  type StateRedeclaredEvent,
} from 'nestjs-redis-queues';
import { CapturedLogs, freePort, startRedis, type RedisServer } from '@test/support/faults';
import { startQueueApp, type QueueApp } from '@test/support/fixtures';
import { pollUntil, uniquePrefix } from '@test/support/testing';

const EVERY_MS = 200;
const runs: { app: number; occurrence: number; attempt: number; at: number }[] = [];

function tickJob(app: number) {
  @Injectable()
  class Tick {
    @Recurring({ everyMs: EVERY_MS, name: 'tick' })
    tick(ctx: RecurringContext) {
      runs.push({ app, occurrence: ctx.occurrence, attempt: ctx.attempt, at: Date.now() });
    }
  }
  return Tick;
}

/**
 * What a process declares in Redis at start (the @Recurring schedules, the queues' records) when Redis
 * loses its data, and when Redis is not there at start-up (startup: 'continue').
 */
describe('Declared state after Redis lost its data', () => {
  let server: RedisServer | undefined;
  const apps: QueueApp[] = [];
  const clients: IORedis[] = [];

  afterEach(async () => {
    runs.length = 0;
    await Promise.all(apps.splice(0).map(({ app }) => app.close()));
    for (const client of clients.splice(0)) client.disconnect();
    await server?.stop();
    server = undefined;
  });

  async function start(url: string, app: number, logger?: CapturedLogs, root = {}, registry?: Registry) {
    const started = await startQueueApp({
      connection: url,
      prefix: 'heal',
      root: { idlePollMs: 60_000, ...root },
      providers: [tickJob(app)],
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

  it('declares the schedule again after FLUSHALL, once across two processes, and says so', async () => {
    server = await startRedis();
    const logs = [new CapturedLogs(), new CapturedLogs()];
    const registries = [new Registry(), new Registry()];
    const [first] = await Promise.all([
      start(server.url, 1, logs[0], {}, registries[0]),
      start(server.url, 2, logs[1], {}, registries[1]),
    ]);
    const redeclared: StateRedeclaredEvent[] = [];
    for (const { app } of apps) app.get(QueueEvents).on('state.redeclared', (event) => redeclared.push(event));
    await pollUntil(() => runs.length >= 2, 'two runs');
    const redis = client(server.url);
    await redis.flushall();
    const lostAt = Date.now();
    // The guard looks every 3 s; an everyMs schedule then runs at its next tick.
    const healed = await pollUntil(() => runs.find((run) => run.at > lostAt), 'a run after FLUSHALL', 8_000);
    expect(healed.at - lostAt).toBeLessThan(3000 + 2 * EVERY_MS + 1000);
    await pollUntil(() => runs.filter((run) => run.at > lostAt).length >= 5, 'five runs after FLUSHALL');
    // One pending occurrence, each tick once.
    expect(await redis.zcard('heal:{recurring.tick:0}:due')).toBeLessThanOrEqual(1);
    const ticks = runs.map((run) => run.occurrence);
    expect(new Set(ticks).size).toBe(ticks.length);
    // Whoever placed it says so; the queue's record (kind, shards) comes back too.
    const warned = logs.flatMap((log) => log.find('warn', /@Recurring "tick": its schedule was missing in Redis/));
    expect(warned.length).toBeGreaterThanOrEqual(1);
    expect(redeclared).toContainEqual({ queue: 'recurring.tick', what: 'recurring', name: 'tick' });
    const counted = await Promise.all(
      registries.map(async (registry) => {
        const { values } = await registry.getSingleMetric('nrq_state_redeclared_total')!.get();
        return values.find((value) => value.labels.what === 'recurring')?.value ?? 0;
      }),
    );
    expect(counted[0] + counted[1]).toBe(redeclared.filter((event) => event.what === 'recurring').length);
    await pollUntil(async () => (await redis.hget('heal:{recurring.tick}:meta', 'shards')) === '1', 'the record');
    expect((await first.app.get(RecurringSchedules).list()).map((each) => each.name)).toEqual(['tick']);
  });

  it('declares the schedule again after a restart without persistence', async () => {
    server = await startRedis();
    const { port } = server;
    await start(server.url, 1, undefined, { commandTimeoutMs: 1000 });
    await pollUntil(() => runs.length >= 2, 'two runs');
    await server.kill('SIGKILL');
    server = await startRedis({ port });
    const restartedAt = Date.now();
    await pollUntil(() => runs.find((run) => run.at > restartedAt), 'a run after the restart', 8_000);
    const redis = client(server.url);
    expect(await redis.hexists('heal:{recurring.tick:0}:repeats', 'tick')).toBe(1);
  });

  it("starts with startup: 'continue' while Redis is down, and runs the schedule once it is up", async () => {
    const port = await freePort();
    const logs = new CapturedLogs();
    const startedAt = Date.now();
    await start(`redis://127.0.0.1:${port}`, 1, logs, { startup: 'continue', commandTimeoutMs: 1000 });
    expect(Date.now() - startedAt).toBeLessThan(5000);
    expect(logs.find('warn', /@Recurring "tick" could not be declared yet/)).toHaveLength(1);
    server = await startRedis({ port });
    await pollUntil(() => runs.length >= 2, 'runs once Redis is up', 10_000);
  });
});

describe('@Recurring health', () => {
  const apps: QueueApp[] = [];
  afterEach(async () => {
    runs.length = 0;
    await Promise.all(apps.splice(0).map(({ app }) => app.close()));
  });

  it('reports a schedule declared here that nothing runs, and one missing in Redis', async () => {
    const server = await startRedis();
    try {
      const started = await startQueueApp({
        connection: server.url,
        prefix: uniquePrefix('rh'),
        root: { consumers: false },
        providers: [tickJob(1)],
      });
      apps.push(started);
      const health = started.app.get(QueueHealthIndicator);
      const overdue = await pollUntil(async () => {
        const result = (await health.isHealthy('queues', { recurringGraceMs: 0 })).queues;
        return result.recurring?.tick.overdueMs !== undefined ? result : undefined;
      }, 'the schedule overdue');
      expect(overdue.status).toBe('down');
      expect(overdue.message).toMatch(/recurring "tick": its tick of .* is \d+ ms late/);
      expect((await health.isHealthy('queues')).queues.status).toBe('up');

      const redis = new IORedis(server.url);
      // The guard may put it back between the two calls: lose it again until a check sees it gone.
      const missing = await pollUntil(async () => {
        await redis.flushall();
        const result = (await health.isHealthy('queues')).queues;
        return result.recurring?.tick.missing ? result : undefined;
      }, 'the schedule missing');
      redis.disconnect();
      expect(missing.status).toBe('down');
      expect(missing.message).toMatch(/recurring "tick": declared here but missing in Redis/);
    } finally {
      await Promise.all(apps.splice(0).map(({ app }) => app.close()));
      await server.stop();
    }
  });
});
