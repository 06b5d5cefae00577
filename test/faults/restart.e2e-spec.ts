import type { Type } from '@nestjs/common';
import { createHash } from 'node:crypto';
import IORedis from 'ioredis';
import type { DelayQueue, FixedQueue } from 'nestjs-redis-queues';
import { scriptLibrary } from '../../libs/queue/src/queue-scripts';
import { recordBatches, recordTasks, useQueueApps } from '@test/support/fixtures';
import { pollUntil, resolves, uniquePrefix } from '@test/support/testing';
import { startRedis, type RedisServer } from '@test/support/faults';

const fixedOptions = { name: 'events', shards: 4, capacity: 1_000_000, batchSize: 256, maxWaitMs: 20 };
const delayOptions = { name: 'tasks', shards: 4, leaseMs: 1000 };

const taskLog = recordTasks('tasks', { concurrency: 16 });
const eventLog = recordBatches<string>('events', { concurrency: 4 });

/** Producers that push and schedule as fast as they are answered until stopped, recording what resolved. */
function load(events: FixedQueue<string>, tasks: DelayQueue<{ n: number }>, loops: number) {
  const pushed: string[] = [];
  const scheduled = new Map<string, number>();
  let failures = 0;
  let lastSuccess = 0;
  let running = true;
  let n = 0;
  const loop = async () => {
    while (running) {
      const i = n++;
      try {
        if (i % 3 === 0) {
          const id = `t-${i}`;
          const { runAt } = await tasks.schedule({ n: i }, { id, delayMs: i % 1500 });
          scheduled.set(id, runAt);
        } else {
          await events.push(`g${i % 16}`, `m-${i}`);
          pushed.push(`m-${i}`);
        }
        lastSuccess = Date.now();
      } catch {
        failures++;
        // A load generator, not a synchronisation: keeps a refused producer from spinning.
        await new Promise((resolve) => setTimeout(resolve, 5));
      }
    }
  };
  const done = Promise.all(Array.from({ length: loops }, loop));
  return {
    pushed,
    scheduled,
    get failures() {
      return failures;
    },
    get lastSuccess() {
      return lastSuccess;
    },
    stop: () => {
      running = false;
      return done;
    },
  };
}

describe('redis-server killed and restarted', () => {
  const harness = useQueueApps();
  let server: RedisServer | undefined;

  afterEach(async () => {
    await server?.stop();
  });
  async function boot(url: string, prefix: string, providers: Type[], idlePollMs = 500) {
    const app = await harness.start({
      connection: url,
      prefix,
      root: { idlePollMs },
      fixed: [fixedOptions],
      delay: [delayOptions],
      providers,
    });
    return { events: app.fixed<string>('events'), tasks: app.delay<{ n: number }>('tasks') };
  }

  it('keeps every acknowledged push and schedule across a SIGKILL with appendfsync always, and the app recovers by itself', async () => {
    const persistence = { appendonly: true, extraArgs: ['--appendfsync', 'always'] };
    server = await startRedis(persistence);
    const { port, dir } = server;
    const prefix = uniquePrefix();
    const { events, tasks } = await boot(server.url, prefix, [taskLog.consumer]);
    // Far-future tasks stay put through the restart: get() must find them unchanged.
    const later = await Promise.all(
      Array.from({ length: 50 }, (_, i) => tasks.schedule({ n: -i }, { id: `later-${i}`, delayMs: 3_600_000 + i })),
    );

    const producers = load(events, tasks, 32);
    await pollUntil(
      () => producers.pushed.length > 3_000 && producers.scheduled.size > 1_000,
      'load to build up',
      20_000,
    );
    await server.kill('SIGKILL');
    const killedAt = Date.now();
    const resolvedBeforeKill = { pushed: producers.pushed.length, scheduled: producers.scheduled.size };
    await pollUntil(() => producers.failures > 100, 'producers to see the outage');

    server = await startRedis({ port, dir, ...persistence });
    const restartedAt = Date.now();
    await pollUntil(() => producers.lastSuccess > restartedAt, 'producers to succeed again', 10_000);
    const recoveredMs = producers.lastSuccess - restartedAt;
    // Some more load on the same application after the restart, then quiet.
    const afterRestart = producers.pushed.length;
    await pollUntil(() => producers.pushed.length > afterRestart + 1_000, 'load after the restart');
    await producers.stop();

    for (const task of later)
      expect(await tasks.get(task.id)).toMatchObject({ state: 'scheduled', runAt: task.runAt, attempts: 0 });
    const pushed = new Set(producers.pushed);
    expect((await events.stats()).pending).toBeGreaterThanOrEqual(pushed.size);

    // Every task scheduled and acknowledged, before or after the kill, fires at least once.
    await pollUntil(
      () => {
        const fired = new Set(taskLog.ids());
        return [...producers.scheduled.keys()].every((id) => fired.has(id));
      },
      'every scheduled task to fire',
      20_000,
    );

    // Another application drains the FixedQueue: every acknowledged push is there, none twice.
    await boot(server.url, prefix, [eventLog.consumer]);
    // Drained once nothing is pending and no batch is out (its handler done, the group let go of).
    await pollUntil(
      async () => {
        const { pending, active } = await events.stats();
        return pending === 0 && active === 0;
      },
      'the FixedQueue to drain',
      20_000,
    );
    const delivered = new Set(eventLog.messages());
    expect(delivered.size).toBe(eventLog.messages().length);
    expect([...pushed].filter((m) => !delivered.has(m))).toEqual([]);

    const redelivered = taskLog.tasks.filter((f) => f.ctx.attempt > 1).length;
    process.stdout.write(
      `restart under load: ${resolvedBeforeKill.pushed} pushes and ${resolvedBeforeKill.scheduled} schedules acknowledged before the kill, ` +
        `${pushed.size} and ${producers.scheduled.size} in all, ${producers.failures} calls refused while down ` +
        `(${restartedAt - killedAt} ms), producers back ${recoveredMs} ms after the restart, ${redelivered} redeliveries\n`,
    );
    expect(recoveredMs).toBeLessThan(5_000);
  }, 90_000);

  it('reloads its scripts and resubscribes when Redis restarts empty (no persistence)', async () => {
    server = await startRedis();
    const { port } = server;
    const prefix = uniquePrefix();
    const { events, tasks } = await boot(server.url, prefix, [taskLog.consumer, eventLog.consumer], 60_000);
    await tasks.schedule({ n: 1 }, { id: 'before' });
    await taskLog.untilTasks(1);

    await server.kill('SIGKILL');
    server = await startRedis({ port });
    const raw = new IORedis(server.url);
    try {
      const push = scriptLibrary().text('fixed-push');
      const sha = createHash('sha1').update(push).digest('hex');
      expect(await raw.script('EXISTS', sha)).toEqual([0]);
      await pollUntil(() => resolves(() => events.push('g', 'after')), 'a push after the restart', 10_000);
      expect(await raw.script('EXISTS', sha)).toEqual([1]);
      // The wake-up channels are subscribed again, so idle consumers (polling once a minute here) hear of new work.
      const channels = [`${prefix}:tasks:wake`, `${prefix}:events:wake`];
      await pollUntil(async () => {
        const counts = (await raw.call('PUBSUB', 'NUMSUB', ...channels)) as (string | number)[];
        return counts[1] === 1 && counts[3] === 1;
      }, 'the wake-up channels to be subscribed again');
    } finally {
      raw.disconnect();
    }
    await tasks.schedule({ n: 2 }, { id: 'after' });
    await pollUntil(
      () => taskLog.tasks.some((f) => f.id === 'after') && eventLog.messages().includes('after'),
      'both consumers after the restart',
      10_000,
    );
    expect(await tasks.get('before')).toBeNull();
  });
});
