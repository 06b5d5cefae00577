import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { recordBatches, recordTasks, useQueueApps } from '@test/support/fixtures';
import { freePort, startRedis, type RedisServer } from '@test/support/faults';
import { expectErrors, expectedErrors } from '@test/support/logs';
import { pollUntil } from '@test/support/testing';

// A self-signed certificate for 127.0.0.1 / localhost, made for these tests only (valid until 2126).
const TLS_DIR = join(__dirname, '../fixtures/tls');
const ca = readFileSync(join(TLS_DIR, 'cert.pem'));

const eventLog = recordBatches<string>('events');
const taskLog = recordTasks('tasks');

describe('TLS: connection options reach ioredis as they are', () => {
  const harness = useQueueApps();
  let server: RedisServer;
  let tlsPort: number;

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
    await server?.stop();
  });

  it('pushes, consumes, schedules and fires over TLS with ioredis tls options', async () => {
    const app = await harness.start({
      connection: { host: '127.0.0.1', port: tlsPort, tls: { ca } },
      root: { idlePollMs: 200 },
      fixed: [{ name: 'events', shards: 2, batchSize: 2, maxWaitMs: 20 }],
      delay: [{ name: 'tasks', shards: 2 }],
      providers: [eventLog.consumer, taskLog.consumer],
    });
    await app.fixed<string>('events').pushMany('g', ['a', 'b']);
    await app.delay('tasks').schedule({}, { id: 'over-tls', delayMs: 10 });
    await pollUntil(() => eventLog.messages().length === 2 && taskLog.tasks.length === 1, 'the batch and the task');
    expect(eventLog.messages()).toEqual(['a', 'b']);
    expect(taskLog.ids()).toEqual(['over-tls']);
    // The same options without `tls` do not get through: the port speaks TLS only.
    expectErrors(/^Cannot reach Redis at 127\.0\.0\.1:\d+/);
    const plain = harness.start({
      connection: { host: '127.0.0.1', port: tlsPort },
      root: { commandTimeoutMs: 1000 },
      fixed: [{ name: 'events' }],
    });
    await expect(plain).rejects.toThrow(/Cannot reach Redis at 127\.0\.0\.1:\d+/);
    expect(expectedErrors()).toHaveLength(1);
  });

  it('takes rediss:// URLs to TLS, verifying the certificate by default', async () => {
    expectErrors(/^Cannot reach Redis at rediss:/);
    const start = harness.start({
      connection: `rediss://127.0.0.1:${tlsPort}`,
      root: { commandTimeoutMs: 2000 },
      fixed: [{ name: 'events' }],
    });
    // Node's default CAs do not know the test certificate: the handshake itself is refused.
    await expect(start).rejects.toThrow(
      /Cannot reach Redis at rediss:\/\/127\.0\.0\.1:\d+\/? \(self[- ]signed certificate\)/i,
    );
    expect(expectedErrors()).toHaveLength(1);
  });
});
