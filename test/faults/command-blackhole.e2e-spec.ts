import { Cluster } from 'ioredis';
import { Registry } from 'prom-client';
import { QueueConnectionError, QueueHealthIndicator, QueueMetricsModule } from 'nestjs-redis-queues';
import { recordBatches, useQueueApps } from '@test/support/fixtures';
import { CapturedLogs, startCluster, timed, type LocalCluster } from '@test/support/faults';
import { RedisProxy, useProxiedRedis } from '@test/support/redis-proxy';
import { pollUntil, resolves, uniquePrefix } from '@test/support/testing';

const batches = recordBatches<{ n: number }>('events');

/**
 * A command connection whose traffic is dropped while its socket stays open (a NAT or proxy that
 * forgot the flow) was never noticed: every call waited `commandTimeoutMs` and failed, consumers
 * claimed nothing, and nothing reconnected until something reset the socket. Its silence is now
 * noticed and the connection replaced; here `commandTimeoutMs` is 30 s, so a call that waited for it
 * would fail every bound below.
 */
describe('a black-holed command connection', () => {
  const harness = useQueueApps();
  const redis = useProxiedRedis();

  it('is replaced within seconds: calls in flight fail as unknown, health is down, and work resumes once the path is back', async () => {
    const logs = new CapturedLogs();
    const registry = new Registry();
    const { app, fixed } = await harness.start({
      connection: redis.url,
      root: { commandTimeoutMs: 30_000 },
      fixed: [{ name: 'events', shards: 2, maxWaitMs: 0 }],
      providers: [batches.consumer],
      imports: [QueueMetricsModule.register({ registry })],
      logger: logs,
    });
    const restarts = async () =>
      (await registry.getSingleMetric('nrq_connection_restarts_total')!.get()).values[0].value;
    const health = app.get(QueueHealthIndicator);
    const status = async () => (await health.isHealthy('queues')).queues.status;
    await fixed('events').push('warm', { n: 0 });
    await batches.untilMessages(1);
    const opened = redis.proxy.commandConnections;

    redis.proxy.blackHoleCommands(true);
    const push = await timed(fixed('events').push('lost', { n: 1 }));
    expect(push.error).toBeInstanceOf(QueueConnectionError);
    expect((push.error as QueueConnectionError).outcome).toBe('unknown');
    // Noticed after 3 s of silence (a poll or health's PING may have been waiting already).
    expect(push.ms).toBeLessThan(8_000);
    expect(await status()).toBe('down');
    // The silent socket was dropped and another one opened (black-holed too while the path is down).
    await pollUntil(() => redis.proxy.commandConnections > opened, 'a new command connection', 10_000);
    await pollUntil(() => logs.find('warn', /^Redis: no reply for /).length > 0, 'the warning', 5_000);
    expect(await restarts()).toBeGreaterThanOrEqual(1);

    redis.proxy.blackHoleCommands(false);
    const restored = Date.now();
    await pollUntil(() => resolves(() => fixed('events').push('healed', { n: 2 })), 'a push to succeed', 10_000);
    const pushedAfterMs = Date.now() - restored;
    await pollUntil(() => batches.messages().some(({ n }) => n === 2), 'the pushed message to be claimed', 10_000);
    const claimedAfterMs = Date.now() - restored;
    await pollUntil(async () => (await status()) === 'up', 'health to be up again', 5_000);
    expect(logs.find('warn', /^Redis: no reply for /)).toHaveLength(1);
    expect(logs.find('log', /^Redis: answering again/)).toHaveLength(1);
    // Before: never (the silent socket was kept until something reset it).
    expect(pushedAfterMs).toBeLessThan(8_000);
    expect(claimedAfterMs).toBeLessThan(10_000);
  });
});

/**
 * The same on a Redis Cluster, where every call goes out on the connection of the node that holds its
 * slot: each master is reached through a proxy of its own (ioredis' natMap), and the one holding the
 * queue's only shard is black-holed.
 */
describe('a black-holed connection to a Redis Cluster node', () => {
  const harness = useQueueApps();
  let cluster: LocalCluster;
  const proxies = new Map<number, RedisProxy>();

  beforeAll(async () => {
    cluster = await startCluster();
    for (const { port } of cluster.masters) {
      const proxy = new RedisProxy(port);
      await proxy.start();
      proxies.set(port, proxy);
    }
  }, 60_000);
  afterAll(async () => {
    for (const proxy of proxies.values()) await proxy.stop();
    await cluster?.stop();
  });

  it('is replaced within seconds: calls in flight fail as unknown, and work resumes once the path is back', async () => {
    const prefix = uniquePrefix();
    const admin = new Cluster(cluster.masters);
    let owner: number;
    try {
      const slot = Number(await admin.cluster('KEYSLOT', `${prefix}:{events:0}:ready`));
      owner = Number(admin.slots[slot][0].split(':')[1]);
    } finally {
      admin.disconnect();
    }
    const proxy = proxies.get(owner)!;
    const natMap = Object.fromEntries(
      [...proxies].map(([port, { port: proxied }]) => [`127.0.0.1:${port}`, { host: '127.0.0.1', port: proxied }]),
    );
    const logs = new CapturedLogs();
    const { fixed } = await harness.start({
      prefix,
      connection: { cluster: cluster.masters, options: { natMap } },
      root: { commandTimeoutMs: 30_000 },
      fixed: [{ name: 'events', shards: 1, maxWaitMs: 0 }],
      providers: [batches.consumer],
      logger: logs,
    });
    await fixed('events').push('warm', { n: 0 });
    await batches.untilMessages(1);

    proxy.blackHoleCommands(true);
    const push = await timed(fixed('events').push('lost', { n: 1 }));
    expect(push.error).toBeInstanceOf(QueueConnectionError);
    expect((push.error as QueueConnectionError).outcome).toBe('unknown');
    expect(push.ms).toBeLessThan(8_000);
    // Its socket was destroyed: ioredis connects to the node again when a call is next routed to it.
    const node = `127.0.0.1:${proxy.port}`;
    expect(logs.find('warn', new RegExp(`^Redis node ${node}: no reply for `))).toHaveLength(1);

    proxy.blackHoleCommands(false);
    const restored = Date.now();
    await pollUntil(() => resolves(() => fixed('events').push('healed', { n: 2 })), 'a push to succeed', 15_000);
    await pollUntil(() => batches.messages().some(({ n }) => n === 2), 'the pushed message to be claimed', 10_000);
    // Before: never (the silent connection was kept, and every call to the node's slots waited on it).
    expect(Date.now() - restored).toBeLessThan(15_000);
    await pollUntil(
      () => logs.find('log', new RegExp(`^Redis node ${node}: answering again`)).length === 1,
      'the recovery line',
    );
  });
});
