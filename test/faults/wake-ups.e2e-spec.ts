import type IORedis from 'ioredis';
import { recordBatches, recordTasks, useQueueApps } from '@test/support/fixtures';
import { pollUntil, rawClient, uniquePrefix } from '@test/support/testing';
import { useWorkerProcesses } from '@test/support/worker-processes';

/**
 * Work that becomes available in one process must wake the consumers of the others, which sleep up to
 * idlePollMs (a minute by default) between polls: work given back at shutdown, and a repeat's next
 * occurrence, placed by the process that ran the last one.
 */
describe('wake-ups across processes', () => {
  const workers = useWorkerProcesses();
  let redis: IORedis;

  beforeAll(() => {
    redis = rawClient();
  });
  afterAll(async () => {
    await redis.quit();
  });

  describe('work given back at shutdown', () => {
    const harness = useQueueApps();
    const events = recordBatches<{ n: number }>('events');
    const loose = recordBatches<{ n: number }>('loose');
    const jobs = recordTasks<{ n: number }>('jobs');

    it('is taken by a running process at once, not when its 30 s lease would have ended', async () => {
      const prefix = uniquePrefix('giveback');
      const logKey = `${prefix}-log`;
      const worker = await workers.spawn('give-back-worker.js', workers.env({ PREFIX: prefix, LOG_KEY: logKey }));
      const ordered = { shards: 2, maxWaitMs: 0, leaseMs: 30_000 };
      // The same queues, in this process, with the default idlePollMs: asleep unless woken.
      const { fixed, delay } = await harness.start({
        prefix,
        fixed: [
          { name: 'events', ...ordered, delivery: 'at-least-once' },
          { name: 'loose', ...ordered, batchSize: 1 },
        ],
        delay: [{ name: 'jobs', shards: 2, leaseMs: 30_000 }],
      });
      await fixed('events').push('g', { n: 1 });
      await fixed('loose').pushMany('h', [{ n: 1 }, { n: 2 }]);
      await delay('jobs').schedule({ n: 1 }, { id: 't' });
      await pollUntil(async () => (await redis.llen(logKey)) === 3, 'the worker to hold all three');
      expect((await redis.lrange(logKey, 0, -1)).sort()).toEqual(['events|g', 'jobs|t', 'loose|h']);

      // Consumers of the same queues start here now: they find everything held for 30 s, and sleep.
      const consumer = await harness.start({
        prefix,
        fixed: [
          { name: 'events', ...ordered, delivery: 'at-least-once' },
          { name: 'loose', ...ordered, batchSize: 1 },
        ],
        delay: [{ name: 'jobs', shards: 2, leaseMs: 30_000 }],
        providers: [events.consumer, loose.consumer, jobs.consumer],
      });
      expect(consumer.prefix).toBe(prefix);
      // Its shutdown gives up on its handlers after shutdownTimeoutMs (300 ms), then gives their work back.
      const closing = Date.now() + 300;
      worker.kill('SIGTERM');

      await Promise.all([events.untilMessages(1, 10_000), loose.untilMessages(1, 10_000), jobs.untilTasks(1, 10_000)]);
      const lags = [events.batches[0].ctx.claimedAt, loose.batches[0].ctx.claimedAt, jobs.tasks[0].at].map(
        (at) => at - closing,
      );
      expect(events.batches.map((batch) => [batch.group, batch.messages, batch.ctx.attempt])).toEqual([
        ['g', [{ n: 1 }], 1],
      ]);
      // At most once: the given-back group's next batch.
      expect(loose.messages()).toEqual([{ n: 2 }]);
      expect(jobs.tasks.map((task) => task.id)).toEqual(['t']);
      for (const lag of lags) expect(lag).toBeLessThan(5_000);
      process.stdout.write(`given back at shutdown, taken by another process ${lags.join(', ')} ms after\n`);
    });
  });

  describe('a repeat whose last runner dies between two ticks', () => {
    const EVERY_MS = 500;

    it('runs its next ticks on time in the other processes', async () => {
      const prefix = uniquePrefix('rec-kill');
      const logKey = `${prefix}-log`;
      const env = workers.env({ PREFIX: prefix, LOG_KEY: logKey, EVERY_MS: String(EVERY_MS), IDLE_POLL_MS: '60000' });
      const runners = await Promise.all(Array.from({ length: 3 }, () => workers.spawn('recurring-worker.js', env)));
      const ended = async () =>
        (await redis.lrange(logKey, 0, -1))
          .filter((line) => line.startsWith('end|'))
          .map((line) => line.split('|').map(Number))
          .map(([, occurrence, , pid, at]) => ({ occurrence, pid, at }));
      await pollUntil(async () => (await ended()).length >= 3, 'three ticks', 10_000);

      // The runner of the last tick dies between two ticks: its run and its hint well done (a process that
      // dies in the few ms between placing the next occurrence and announcing it leaves the others to find
      // it when its run's lease ends), the next tick not claimed yet.
      const last = await pollUntil(async () => {
        const runs = await ended();
        const newest = runs[runs.length - 1];
        const since = Date.now() - newest.at;
        return since >= 100 && since < 300 ? newest : undefined;
      }, 'a tick that ended a moment ago');
      runners.find((runner) => runner.pid === last.pid)!.kill('SIGKILL');
      const killedAt = Date.now();

      await pollUntil(
        async () => (await ended()).some((run) => run.occurrence >= last.occurrence + 6 * EVERY_MS),
        'six ticks more',
        15_000,
      );
      const after = (await ended()).filter((run) => run.occurrence > last.occurrence);
      const ticks = after.map((run) => run.occurrence);
      expect(ticks.slice(0, 6)).toEqual([1, 2, 3, 4, 5, 6].map((i) => last.occurrence + i * EVERY_MS));
      expect(after.every((run) => run.pid !== last.pid)).toBe(true);
      const lateness = after.slice(0, 6).map((run) => run.at - run.occurrence);
      for (const late of lateness) expect(late).toBeLessThan(EVERY_MS);
      process.stdout.write(
        `runner killed ${killedAt - last.at} ms after its tick: next six ticks ended ${lateness.join(', ')} ms after their time\n`,
      );
    });
  });
});
