import { recordTasks, useQueueApps } from '@test/support/fixtures';
import { startRedis, timed, type RedisServer } from '@test/support/faults';

// Holds every delivery until shutdown aborts it: a handler still running when close() begins.
const hanging = recordTasks('tasks', { concurrency: 2 }, (_payload, ctx) => {
  return new Promise<void>((resolve) => ctx.signal.addEventListener('abort', () => resolve()));
});

const SHUTDOWN_MS = 2000;
const COMMAND_MS = 2000;
/** Timers, the hooks of Nest's other modules and a busy 2-core machine. */
const MARGIN_MS = 700;

describe('app.close() within shutdownTimeoutMs + commandTimeoutMs', () => {
  const harness = useQueueApps();
  let server: RedisServer;

  beforeEach(async () => {
    server = await startRedis();
  });
  afterEach(async () => {
    process.kill(server.pid, 'SIGCONT');
    await server.stop();
  });

  it('closes in time with Redis frozen (SIGSTOP) and handlers running', async () => {
    const started = await harness.start({
      connection: server.url,
      root: { shutdownTimeoutMs: SHUTDOWN_MS, commandTimeoutMs: COMMAND_MS, idlePollMs: 200 },
      delay: [{ name: 'tasks', shards: 2 }],
      providers: [hanging.consumer],
    });
    await started.delay('tasks').schedule({}, { id: 'a' });
    await started.delay('tasks').schedule({}, { id: 'b' });
    await hanging.untilTasks(2);

    // Frozen while connected: every reply, QUIT's included, would only come after a timeout.
    process.kill(server.pid, 'SIGSTOP');
    const { ms, error } = await timed(harness.close(started.app));
    expect(error).toBeUndefined();
    // It waited for the handlers, then gave up on Redis within the rest of the budget.
    expect(ms).toBeGreaterThanOrEqual(SHUTDOWN_MS - 50);
    expect(ms).toBeLessThan(SHUTDOWN_MS + COMMAND_MS + MARGIN_MS);
  });

  it('closes in time with Redis frozen and nothing running', async () => {
    const started = await harness.start({
      connection: server.url,
      root: { shutdownTimeoutMs: SHUTDOWN_MS, commandTimeoutMs: COMMAND_MS, idlePollMs: 200 },
      delay: [{ name: 'tasks', shards: 2 }],
      providers: [hanging.consumer],
    });
    await started.delay('tasks').stats();
    process.kill(server.pid, 'SIGSTOP');
    const { ms, error } = await timed(harness.close(started.app));
    expect(error).toBeUndefined();
    expect(ms).toBeLessThan(SHUTDOWN_MS + COMMAND_MS + MARGIN_MS);
  });
});
