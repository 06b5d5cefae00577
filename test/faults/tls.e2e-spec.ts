import { Injectable, type INestApplication } from '@nestjs/common';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import {
  BatchConsumer,
  DelayConsumer,
  type DelayContext,
  DelayQueue,
  FixedQueue,
  getDelayQueueToken,
  getFixedQueueToken,
  QueueModule,
} from 'nestjs-redis-queues';
import { freePort, startRedis, type RedisServer } from '../support/faults';
import { createApp, pollUntil, uniquePrefix } from '../support/testing';

// A self-signed certificate for 127.0.0.1 / localhost, made for these tests only (valid until 2126).
const TLS_DIR = join(__dirname, '../fixtures/tls');
const ca = readFileSync(join(TLS_DIR, 'cert.pem'));

@Injectable()
class Consumers {
  static messages: string[] = [];
  static tasks: string[] = [];

  @BatchConsumer('events')
  onBatch(messages: string[]) {
    Consumers.messages.push(...messages);
  }

  @DelayConsumer('tasks')
  onTask(_payload: unknown, ctx: DelayContext) {
    Consumers.tasks.push(ctx.id);
  }
}

describe('TLS: connection options reach ioredis as they are', () => {
  let server: RedisServer;
  let tlsPort: number;
  const apps: INestApplication[] = [];

  beforeAll(async () => {
    tlsPort = await freePort();
    // The plain port stays open only for the start-up check of the test helper; the queues use TLS.
    server = await startRedis({
      extraArgs: [
        '--tls-port',
        String(tlsPort),
        '--tls-cert-file',
        join(TLS_DIR, 'cert.pem'),
        '--tls-key-file',
        join(TLS_DIR, 'key.pem'),
        '--tls-ca-cert-file',
        join(TLS_DIR, 'cert.pem'),
        '--tls-auth-clients',
        'no',
      ],
    });
  });

  afterAll(async () => {
    await Promise.all(apps.map((app) => app.close()));
    await server?.stop();
  });

  it('pushes, consumes, schedules and fires over TLS with ioredis tls options', async () => {
    const app = await createApp({
      imports: [
        QueueModule.forRoot({
          connection: { host: '127.0.0.1', port: tlsPort, tls: { ca } },
          prefix: uniquePrefix(),
          idlePollMs: 200,
        }),
        QueueModule.registerFixedQueue({ name: 'events', shards: 2, batchSize: 2, maxWaitMs: 20 }),
        QueueModule.registerDelayQueue({ name: 'tasks', shards: 2 }),
      ],
      providers: [Consumers],
    });
    apps.push(app);
    await app.get<FixedQueue<string>>(getFixedQueueToken('events')).pushMany('g', ['a', 'b']);
    await app.get<DelayQueue>(getDelayQueueToken('tasks')).schedule({}, { id: 'over-tls', delayMs: 10 });
    await pollUntil(() => Consumers.messages.length === 2 && Consumers.tasks.length === 1, 'the batch and the task');
    expect(Consumers.messages).toEqual(['a', 'b']);
    expect(Consumers.tasks).toEqual(['over-tls']);
    // The same options without `tls` do not get through: the port speaks TLS only.
    const plain = createApp({
      imports: [
        QueueModule.forRoot({
          connection: { host: '127.0.0.1', port: tlsPort },
          prefix: uniquePrefix(),
          commandTimeoutMs: 1000,
        }),
        QueueModule.registerFixedQueue({ name: 'events' }),
      ],
    });
    await expect(plain).rejects.toThrow(/Cannot reach Redis at 127\.0\.0\.1:\d+/);
  });

  it('takes rediss:// URLs to TLS, verifying the certificate by default', async () => {
    const start = createApp({
      imports: [
        QueueModule.forRoot({
          connection: `rediss://127.0.0.1:${tlsPort}`,
          prefix: uniquePrefix(),
          commandTimeoutMs: 2000,
        }),
        QueueModule.registerFixedQueue({ name: 'events' }),
      ],
    });
    // Node's default CAs do not know the test certificate: the handshake itself is refused.
    await expect(start).rejects.toThrow(
      /Cannot reach Redis at rediss:\/\/127\.0\.0\.1:\d+\/? \(.*self[- ]signed certificate/i,
    );
  });
});
