import { Injectable } from '@nestjs/common';
import { QueueDashboardModule, Recurring, RecurringSchedules } from 'nestjs-redis-queues';
import { CapturedLogs } from '@test/support/faults';
import { startQueueApp, type QueueApp } from '@test/support/fixtures';
import { pollUntil, redisUrl, uniquePrefix } from '@test/support/testing';
import { useWorkerProcesses } from '@test/support/worker-processes';

/** The method recurring-worker.js declares, as an older pod of the same application would. */
@Injectable()
class Job {
  @Recurring({ everyMs: 1000 })
  tick() {}
}

/**
 * Processes of two versions of an application declare one schedule differently (v1 everyMs 1000, v2
 * everyMs 3000): what a rolling deploy and a rollback leave in effect.
 */
// Separate processes on a shared 2-core machine: starting three Node processes takes seconds under load.
jest.setTimeout(120_000);

describe('@Recurring declarations of two versions', () => {
  const workers = useWorkerProcesses();
  const apps: QueueApp[] = [];

  afterEach(async () => {
    await Promise.all(apps.splice(0).map(({ app }) => app.close()));
  });

  const spawnWorker = (prefix: string, everyMs: number) =>
    workers.spawn(
      'recurring-worker.js',
      workers.env({ PREFIX: prefix, LOG_KEY: `${prefix}-log`, EVERY_MS: String(everyMs) }),
    );

  /** An application of v1 in this process, its log kept. */
  async function startV1(prefix: string) {
    const logs = new CapturedLogs();
    const started = await startQueueApp({
      connection: redisUrl(),
      prefix,
      providers: [Job],
      imports: [QueueDashboardModule.register()],
      logger: logs,
    });
    apps.push(started);
    const schedules = started.app.get(RecurringSchedules);
    const inEffect = async () => (await schedules.list()).find((each) => each.name === 'Job.tick')!;
    return { app: started.app, logs, schedules, inEffect };
  }

  it('keeps the newer schedule when a pod of the older version restarts during a rolling deploy', async () => {
    const prefix = uniquePrefix('roll');
    await spawnWorker(prefix, 1000);
    await spawnWorker(prefix, 3000);
    // A v1 pod restarts while v2 pods run.
    const { app, logs, inEffect } = await startV1(prefix);
    const listed = await inEffect();
    expect(listed.everyMs).toBe(3000);
    await app.listen(0, '127.0.0.1');
    const page = await (await fetch(`${(await app.getUrl()).replace('[::1]', '127.0.0.1')}/queues`)).text();
    expect(page).toMatch(/every 3000 ms \(also declared: every 1000 ms by Job\.tick on .* pid \d+\)/);
    expect(listed.declarations).toEqual([
      expect.objectContaining({ everyMs: 3000, live: true, inEffect: true, declaredBy: expect.stringMatching(/pid/) }),
      expect.objectContaining({ everyMs: 1000, live: true, inEffect: false }),
    ]);
    const [warning] = logs.find('warn', /@Recurring "Job.tick": running processes declare 2 different schedules/);
    expect(warning).toMatch(/In effect: \{ everyMs 3000, missed 'latest' \} declared by Job\.tick on .* pid \d+/);
    expect(warning).toMatch(/also declared: \{ everyMs 1000, missed 'latest' \} declared by Job\.tick on .* pid \d+/);
    expect(warning).toMatch(/this process declares another/);
  });

  it.each([['SIGTERM'], ['SIGKILL']] as const)(
    'lets the older schedule take over in a rollback once the last newer process is gone (%s)',
    async (signal) => {
      const prefix = uniquePrefix('rollback');
      const v1 = await spawnWorker(prefix, 1000);
      const v2 = await spawnWorker(prefix, 3000);
      await workers.stop(v1, 'SIGTERM');
      // The rollback starts v1 pods while the last v2 one still runs: v2's stays in effect...
      const { logs, inEffect } = await startV1(prefix);
      expect((await inEffect()).everyMs).toBe(3000);
      await workers.stop(v2, signal);
      // ...until it is gone: at once when it shuts down, after its declarations expire (15 s) when it dies.
      const stoppedAt = Date.now();
      await pollUntil(async () => (await inEffect()).everyMs === 1000, 'v1 in effect', 25_000, 200);
      expect(Date.now() - stoppedAt).toBeLessThan(signal === 'SIGTERM' ? 5000 : 20_000);
      const listed = await inEffect();
      expect(listed.declarations).toEqual([
        expect.objectContaining({ everyMs: 1000, live: true, inEffect: true }),
        expect.objectContaining({ everyMs: 3000, live: false, inEffect: false }),
      ]);
      expect(
        logs.find('log', /live processes agree again, \{ everyMs 1000, missed 'latest' \} is in effect/),
      ).toHaveLength(1);
    },
  );
});
