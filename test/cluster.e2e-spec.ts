import { Injectable, type INestApplication } from '@nestjs/common';
import { Cluster } from 'ioredis';
import {
  BatchConsumer,
  type BatchContext,
  DelayConsumer,
  type DelayContext,
  DelayQueue,
  FixedQueue,
  getDelayQueueToken,
  getFixedQueueToken,
  QueueModule,
} from 'nestjs-redis-queues';
import { clusterNodes, createApp, pollUntil, uniquePrefix } from './support/testing';

@Injectable()
class Consumers {
  static messages: string[] = [];
  static tasks: string[] = [];

  @BatchConsumer('events', { concurrency: 4 })
  onBatch(messages: { n: number }[], ctx: BatchContext) {
    Consumers.messages.push(...messages.map((m) => `${ctx.group}/${m.n}`));
  }

  @DelayConsumer('tasks', { concurrency: 8 })
  onTask(_payload: unknown, ctx: DelayContext) {
    Consumers.tasks.push(ctx.id);
  }
}

// Cluster-specific checks; the queues' behaviour suites run on this cluster too (jest.config.js).
describe('on a Redis Cluster (3 masters, 3 replicas)', () => {
  let app: INestApplication;
  const prefix = uniquePrefix();
  // Every write of both queues waits for its master's replica: WAIT must reach the node that owns the shard.
  const waitForReplicas = { replicas: 1, timeoutMs: 5000 };

  beforeAll(async () => {
    app = await createApp({
      imports: [
        QueueModule.forRoot({ connection: { cluster: clusterNodes() }, prefix }),
        QueueModule.registerFixedQueue({ name: 'events', shards: 8, batchSize: 16, maxWaitMs: 50, waitForReplicas }),
        QueueModule.registerDelayQueue({ name: 'tasks', shards: 8, waitForReplicas }),
      ],
      providers: [Consumers],
    });
  });

  afterAll(async () => {
    await app?.close();
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
    const events = app.get<FixedQueue<{ n: number }>>(getFixedQueueToken('events'));
    const tasks = app.get<DelayQueue>(getDelayQueueToken('tasks'));
    await Promise.all(Array.from({ length: 2000 }, (_, n) => events.push(`game-${n % 100}`, { n })));
    await Promise.all(Array.from({ length: 500 }, (_, i) => tasks.schedule({ i }, { id: `t${i}`, delayMs: i % 300 })));
    await pollUntil(
      () => Consumers.messages.length === 2000 && Consumers.tasks.length === 500,
      'every message and task',
      20_000,
    );
    expect(new Set(Consumers.messages).size).toBe(2000);
    expect(new Set(Consumers.tasks).size).toBe(500);
    expect(await events.stats()).toMatchObject({ pushed: 2000, delivered: 2000, pending: 0 });
    await pollUntil(async () => (await tasks.stats()).completed === 500, 'every ack');
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
