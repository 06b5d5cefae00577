import type { INestApplication } from '@nestjs/common';
import IORedis from 'ioredis';
import {
  DelayQueue,
  FixedQueue,
  getDelayQueueToken,
  getFixedQueueToken,
  QueueConfigError,
  QueueModule,
  QueueReplicationError,
} from 'nestjs-redis-queues';
import { startRedis, type RedisServer } from '@test/support/faults';
import { createApp, pollUntil, uniquePrefix } from '@test/support/testing';

describe('waitForReplicas: writes resolve once replicas hold them (Redis WAIT)', () => {
  let primary: RedisServer;
  let replica: RedisServer;
  let onReplica: IORedis;
  let app: INestApplication;
  const prefix = uniquePrefix();
  const waitForReplicas = { replicas: 1, timeoutMs: 300 };

  beforeAll(async () => {
    primary = await startRedis();
    replica = await startRedis({ extraArgs: ['--replicaof', '127.0.0.1', String(primary.port)] });
    onReplica = new IORedis(replica.url);
    await pollUntil(
      async () => /master_link_status:up/.test(await onReplica.info('replication')),
      'the replica to sync',
    );
    app = await createApp({
      imports: [
        QueueModule.forRoot({ connection: primary.url, prefix, consumers: false }),
        QueueModule.registerFixedQueue({ name: 'events', shards: 2, waitForReplicas }),
        QueueModule.registerDelayQueue({ name: 'tasks', shards: 2, waitForReplicas }),
      ],
    });
  });

  afterAll(async () => {
    await app?.close();
    onReplica?.disconnect();
    await replica?.stop();
    await primary?.stop();
  });

  it('resolves pushes and schedules only once the replica holds them', async () => {
    const events = app.get<FixedQueue>(getFixedQueueToken('events'));
    const tasks = app.get<DelayQueue>(getDelayQueueToken('tasks'));
    await Promise.all([events.push('g', { n: 1 }), events.pushMany('h', [{ n: 2 }, { n: 3 }])]);
    await tasks.schedule({ pet: 'rex' }, { id: 'hungry:rex', delayMs: 60_000 });
    await tasks.shift('hungry:rex', -1000);
    // No polling: acknowledged means already on the replica.
    const replicaKeys = await onReplica.keys(`${prefix}:*`);
    const lengths = await Promise.all(
      replicaKeys.filter((key) => key.includes(':g:')).map((key) => onReplica.llen(key)),
    );
    expect(lengths.sort()).toEqual([1, 2]);
    const due = replicaKeys.filter((key) => key.endsWith(':due'));
    const scores = await Promise.all(due.map((key) => onReplica.zscore(key, 'hungry:rex')));
    const runAt = (await tasks.get('hungry:rex'))!.runAt;
    expect(scores.filter(Boolean).map(Number)).toEqual([runAt]);
    expect(await tasks.cancel('hungry:rex')).toBe(true);
    expect(await Promise.all(due.map((key) => onReplica.zscore(key, 'hungry:rex')))).toEqual(due.map(() => null));
  });

  it('fails the call with QueueReplicationError when no replica acknowledges in time, the write kept on the primary', async () => {
    const events = app.get<FixedQueue>(getFixedQueueToken('events'));
    process.kill(replica.pid, 'SIGSTOP'); // frozen, connected: it cannot acknowledge
    try {
      const started = Date.now();
      const error = await events.push('lonely', { n: 1 }).catch((e: unknown) => e);
      expect(error).toBeInstanceOf(QueueReplicationError);
      expect(error).toMatchObject({ acknowledged: 0, required: 1 });
      expect((error as Error).message).toMatch(
        /applied on the primary, but 0 of 1 replicas acknowledged it within 300 ms/,
      );
      expect(Date.now() - started).toBeGreaterThanOrEqual(250);
      expect(await events.size('lonely')).toBe(1);
    } finally {
      process.kill(replica.pid, 'SIGCONT');
    }
    await expect(events.push('lonely', { n: 2 })).resolves.toEqual({ dropped: 0 });
  });

  it('refuses an unbounded or empty wait at start-up', async () => {
    for (const bad of [{ replicas: 0, timeoutMs: 100 }, { replicas: 1, timeoutMs: 0 }, { replicas: 1 }]) {
      const start = createApp({
        imports: [
          QueueModule.forRoot({ connection: primary.url, prefix: uniquePrefix(), consumers: false }),
          QueueModule.registerFixedQueue({ name: 'events', waitForReplicas: bad as never }),
        ],
      });
      await expect(start).rejects.toThrow(QueueConfigError);
      await expect(start).rejects.toThrow(/waitForReplicas\.(replicas|timeoutMs)/);
    }
  });
});
