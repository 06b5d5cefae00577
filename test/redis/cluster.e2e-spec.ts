import { Cluster } from 'ioredis';
import type { DelayQueue, FixedQueue } from 'nestjs-redis-queues';
import { recordBatches, recordTasks, useQueueApps } from '@test/support/fixtures';
import { clusterNodes, pollUntil } from '@test/support/testing';

const messages = recordBatches<{ n: number }>('events', { concurrency: 4 });
const tasks = recordTasks('tasks', { concurrency: 8 });

// Cluster-specific checks; the queues' behaviour suites run on this cluster too (jest.config.js).
describe('on a Redis Cluster (3 masters, 3 replicas)', () => {
  const harness = useQueueApps({ scope: 'suite' });
  let events: FixedQueue<{ n: number }>;
  let delayed: DelayQueue;
  let prefix: string;
  // Every write of both queues waits for its master's replica: WAIT must reach the node that owns the shard.
  const waitForReplicas = { replicas: 1, timeoutMs: 5000 };

  beforeAll(async () => {
    const app = await harness.start({
      fixed: [{ name: 'events', shards: 8, batchSize: 16, maxWaitMs: 50, waitForReplicas }],
      delay: [{ name: 'tasks', shards: 8, waitForReplicas }],
      providers: [messages.consumer, tasks.consumer],
    });
    ({ prefix } = app);
    events = app.fixed('events');
    delayed = app.delay('tasks');
  });

  it('spreads the shards of a queue over several masters', async () => {
    const client = new Cluster(clusterNodes());
    try {
      await client.ping();
      const owners = new Set<string>();
      for (let shard = 0; shard < 8; shard++) {
        const slot = Number(await client.cluster('KEYSLOT', `${prefix}:{events:${shard}}:ready`));
        owners.add(client.slots[slot][0]);
      }
      expect(owners.size).toBeGreaterThan(1);
    } finally {
      client.disconnect();
    }
  });

  it('pushes, consumes, schedules and fires across the cluster, each exactly once, writes acknowledged by replicas', async () => {
    await Promise.all(Array.from({ length: 2000 }, (_, n) => events.push(`game-${n % 100}`, { n })));
    await Promise.all(
      Array.from({ length: 500 }, (_, i) => delayed.schedule({ i }, { id: `t${i}`, delayMs: i % 300 })),
    );
    await pollUntil(
      () => messages.messages().length === 2000 && tasks.tasks.length === 500,
      'every message and task',
      20_000,
    );
    expect(new Set(messages.batches.flatMap((b) => b.messages.map((m) => `${b.group}/${m.n}`))).size).toBe(2000);
    expect(new Set(tasks.ids()).size).toBe(500);
    expect(await events.stats()).toMatchObject({ pushed: 2000, delivered: 2000, pending: 0 });
    await pollUntil(async () => (await delayed.stats()).completed === 500, 'every ack');
    // The WAITs went to the masters that own the shards (several), not to one node at random.
    const client = new Cluster(clusterNodes());
    try {
      await client.ping();
      const stats = await Promise.all(client.nodes('master').map((node) => node.info('commandstats')));
      const waits = stats.map((text) => Number(/cmdstat_wait:calls=(\d+)/.exec(text)?.[1] ?? 0));
      expect(waits.filter((calls) => calls > 0).length).toBeGreaterThan(1);
    } finally {
      client.disconnect();
    }
  });
});
