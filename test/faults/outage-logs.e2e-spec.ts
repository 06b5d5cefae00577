import { recordBatches, recordTasks, useQueueApps } from '@test/support/fixtures';
import { CapturedLogs, startRedis, type RedisServer } from '@test/support/faults';
import { pollUntil } from '@test/support/testing';

const tasks = recordTasks('tasks', { concurrency: 4 });
const batches = recordBatches('events', { concurrency: 2 });

/** How long Redis stays down: the time the log is watched is the subject of the test. */
const OUTAGE_MS = 8_000;

describe('Log volume while Redis is down', () => {
  const harness = useQueueApps();
  let server: RedisServer | undefined;

  afterEach(async () => {
    await server?.stop();
  });

  it('logs the first failure and the recovery, not a line per attempt', async () => {
    server = await startRedis({ appendonly: true });
    const { port, dir } = server;
    const logs = new CapturedLogs();
    await harness.start({
      connection: server.url,
      // A killed server refuses at once: the timeout only bounds start-up's commands, which a loaded CI
      // machine kept past 1 s once.
      root: { idlePollMs: 200, commandTimeoutMs: 5000 },
      fixed: [{ name: 'events', shards: 8, maxWaitMs: 20 }],
      delay: [{ name: 'tasks', shards: 8 }],
      providers: [tasks.consumer, batches.consumer],
      logger: logs,
    });
    const before = logs.lines.length;
    await server.kill('SIGKILL');
    await new Promise((resolve) => setTimeout(resolve, OUTAGE_MS));
    const during = logs.lines.slice(before);
    // Per connection (command, subscriber) and per consumer: the first failure, and no summary yet.
    expect(during.length).toBeLessThanOrEqual(4);
    expect(logs.find('warn', /^Redis: /)).toHaveLength(1);
    expect(logs.find('warn', /could not claim, retrying/)).toHaveLength(2);

    server = await startRedis({ port, dir, appendonly: true });
    await pollUntil(() => logs.find('log', /^Redis: connected again .*\(after \d+ errors over \d+ s\)/)[0], 'recovery');
    await pollUntil(() => logs.find('log', /claiming again failures=\d+/).length === 2, 'both consumers claiming');
  });
});
