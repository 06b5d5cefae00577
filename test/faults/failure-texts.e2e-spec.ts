import { QueueConnectionError } from 'nestjs-redis-queues';
import { recordTasks, useQueueApps } from '@test/support/fixtures';
import { CapturedLogs, freePort, startRedis, type RedisServer } from '@test/support/faults';
import { pollUntil } from '@test/support/testing';

const tasks = recordTasks('tasks');

/** What ioredis says of options the module sets for the user, which no reader of these texts chose. */
const CLIENT_INTERNALS = /maxRetriesPerRequest|max retries per request|enableOfflineQueue/;

describe('failure texts: what happened, in the library’s words', () => {
  const harness = useQueueApps();
  let server: RedisServer | undefined;

  afterEach(async () => {
    await server?.stop();
    server = undefined;
  });

  it('says a call was refused a connection, keeping the client’s error as the cause', async () => {
    const port = await freePort();
    const logs = new CapturedLogs();
    const { delay } = await harness.start({
      connection: `redis://127.0.0.1:${port}`,
      root: { startup: 'continue', consumers: false },
      delay: [{ name: 'tasks', shards: 2 }],
      logger: logs,
    });
    const error = await delay('tasks')
      .schedule({}, { id: 't' })
      .then(
        () => undefined,
        (failure: unknown) => failure,
      );
    expect(error).toBeInstanceOf(QueueConnectionError);
    expect((error as Error).message).toBe(
      `Redis could not be reached (not connected: connection refused at 127.0.0.1:${port} (no Redis listening there)); ` +
        'the call was not sent, so nothing was applied',
    );
    expect(((error as Error).cause as Error).message).toMatch(CLIENT_INTERNALS);
    expect(logs.find('warn', /^Redis: /)).toEqual([
      `Redis: connection refused at 127.0.0.1:${port} (no Redis listening there)`,
    ]);
    expect(logs.lines.filter((line) => CLIENT_INTERNALS.test(line.message))).toEqual([]);
  });

  it('logs a stopped server as closed or refused, never in the client’s terms', async () => {
    server = await startRedis();
    const { port } = server;
    const logs = new CapturedLogs();
    await harness.start({
      connection: server.url,
      root: { idlePollMs: 100, commandTimeoutMs: 1000 },
      delay: [{ name: 'tasks', shards: 2 }],
      providers: [tasks.consumer],
      logger: logs,
    });
    await server.stop();
    server = undefined;
    const claim = await pollUntil(
      () => logs.find('warn', /could not claim, retrying/)[0],
      'the consumer to fail a claim',
    );
    // A claim queued while the client reconnects times out ("not connected") when a loaded machine makes
    // the reconnection attempt slower than commandTimeoutMs, naming the last failure the client saw (the
    // server closing the connection as it stopped, or refusing the next): still the library's words.
    expect(claim).toMatch(
      /Redis (could not be reached|did not answer) \((the connection closed|not connected(: (connection refused at 127\.0\.0\.1:\d+ \(no Redis listening there\)|the connection was closed by the other end))?)\)/,
    );
    const outage = await pollUntil(() => logs.find('warn', /^Redis: /)[0], 'the outage logged');
    expect(outage).toMatch(
      new RegExp(`^Redis: (the connection was closed by the other end|connection refused) at 127\\.0\\.0\\.1:${port}`),
    );
    expect(logs.lines.filter((line) => CLIENT_INTERNALS.test(line.message))).toEqual([]);
  });
});
