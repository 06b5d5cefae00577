import IORedis from 'ioredis';
import { QueueConfigError, QueueHealthIndicator, QueueMemoryError } from 'nestjs-redis-queues';
import { useQueueApps } from '@test/support/fixtures';
import { CapturedLogs, startRedis, type RedisServer } from '@test/support/faults';

/** Redis deleting keys under memory pressure loses queued work silently: start-up says so, health shows it. */
describe('Redis eviction policy and out-of-memory', () => {
  const harness = useQueueApps();
  const servers: RedisServer[] = [];

  afterEach(async () => {
    await Promise.all(servers.splice(0).map((server) => server.stop()));
  });

  async function server(...extraArgs: string[]): Promise<RedisServer> {
    const started = await startRedis({ extraArgs });
    servers.push(started);
    return started;
  }

  const queues = { fixed: [{ name: 'events', shards: 2 }], delay: [{ name: 'tasks', shards: 2 }] };

  it('warns at start-up when the policy evicts, naming the policy, what is lost and the fix', async () => {
    const redis = await server('--maxmemory', '20mb', '--maxmemory-policy', 'allkeys-lru');
    const logs = new CapturedLogs();
    const { app } = await harness.start({ connection: redis.url, ...queues, logger: logs });
    const [warning, ...others] = logs.find('warn', /maxmemory-policy/);
    expect(others).toEqual([]);
    expect(warning).toMatch(/allkeys-lru at redis:\/\/127\.0\.0\.1:\d+/);
    expect(warning).toMatch(/never delivered/);
    expect(warning).toMatch(/CONFIG SET maxmemory-policy noeviction/);
    expect(warning).toMatch(/evictionPolicy: 'fail'/);

    // Health reports it (up: the application was allowed to run with it).
    const health = await app.get(QueueHealthIndicator).isHealthy('queues');
    expect(health.queues).toMatchObject({
      status: 'up',
      evictionPolicy: 'allkeys-lru',
      warning: expect.stringMatching(/maxmemory-policy allkeys-lru/),
    });
  });

  it("refuses to start with evictionPolicy: 'fail', volatile-* policies included", async () => {
    const redis = await server('--maxmemory-policy', 'volatile-ttl');
    const logs = new CapturedLogs();
    const start = harness.start({ connection: redis.url, root: { evictionPolicy: 'fail' }, ...queues, logger: logs });
    await expect(start).rejects.toThrow(QueueConfigError);
    await expect(start).rejects.toThrow(/volatile-ttl at .*the application does not start \(evictionPolicy: 'fail'\)/);
  });

  it('says nothing under noeviction, and health reports the policy', async () => {
    const redis = await server('--maxmemory-policy', 'noeviction');
    const logs = new CapturedLogs();
    const { app } = await harness.start({
      connection: redis.url,
      root: { evictionPolicy: 'fail' },
      ...queues,
      logger: logs,
    });
    expect(logs.find('warn', /maxmemory/)).toEqual([]);
    const health = await app.get(QueueHealthIndicator).isHealthy('queues');
    expect(health.queues).toMatchObject({ status: 'up', evictionPolicy: 'noeviction' });
    expect(health.queues.warning).toBeUndefined();
  });

  it('turns an OOM refusal into QueueMemoryError on every call path, with the cause kept', async () => {
    const redis = await server('--maxmemory-policy', 'noeviction');
    const { fixed, delay } = await harness.start({ connection: redis.url, ...queues });
    const events = fixed<string>('events');
    const tasks = delay('tasks');
    await events.push('g', 'before');
    await tasks.schedule({ n: 1 }, { id: 'before', delayMs: 60_000 });

    const raw = new IORedis(redis.url);
    try {
      // A cap below what is in use: every write that may grow memory is refused from now on.
      await raw.config('SET', 'maxmemory', '1');
      // Each handled as it is made: awaited one by one, a later one would reject before anyone listened.
      const refused = [
        events.push('g', 'after'), // a script sent at once (runNow)
        events.pushMany('g', ['a', 'b']),
        tasks.schedule({ n: 2 }, { id: 'after' }), // a script through auto-pipelining
        tasks.shift('before', 1000),
      ].map((call) =>
        call.then(
          () => undefined,
          (reason: unknown) => reason,
        ),
      );
      for (const error of await Promise.all(refused)) {
        expect(error).toBeInstanceOf(QueueMemoryError);
        expect((error as Error).message).toMatch(/Redis is out of memory .*nothing was applied/);
        expect(((error as Error).cause as Error).message).toMatch(/OOM command not allowed/);
      }
      // Reads still work, and nothing refused was applied.
      expect(await events.size('g')).toBe(1);
      expect(await tasks.get('after')).toBeNull();
      expect((await tasks.get('before'))?.runAt).toBe((await tasks.get('before'))?.runAt);
    } finally {
      await raw.config('SET', 'maxmemory', '0');
      raw.disconnect();
    }
    await events.push('g', 'after');
    expect(await events.size('g')).toBe(2);
  });
});
