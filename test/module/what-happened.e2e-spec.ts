import { Injectable } from '@nestjs/common';
import { Registry } from 'prom-client';
import {
  DelayConsumer,
  InjectDelayQueue,
  QueueMetricsModule,
  type DelayContext,
  type DelayQueue,
} from 'nestjs-redis-queues';
import { CapturedLogs } from '@test/support/faults';
import { recordTasks, useQueueApps } from '@test/support/fixtures';
import { pollUntil } from '@test/support/testing';

/** Counters and contexts say what happened: a task replaced by its own handler, a delivery after a lost lease. */
describe('counters and context', () => {
  const harness = useQueueApps();

  describe('a handler that schedules its own task again', () => {
    const seen: DelayContext[] = [];

    @Injectable()
    class Meals {
      constructor(@InjectDelayQueue('meals') private readonly meals: DelayQueue<{ meal: number }>) {}

      @DelayConsumer('meals')
      async onMeal({ meal }: { meal: number }, ctx: DelayContext): Promise<void> {
        seen.push(ctx);
        // The next meal under the same id, as a pet that gets hungry again does.
        if (meal < 4) await this.meals.schedule({ meal: meal + 1 }, { id: ctx.id, delayMs: 0 });
      }
    }

    afterEach(() => {
      seen.length = 0;
    });

    it('counts each delivery it replaced as completed, in the stats and in the metrics', async () => {
      const registry = new Registry();
      const { delay } = await harness.start({
        root: { idlePollMs: 500 },
        delay: [{ name: 'meals', shards: 1 }],
        imports: [QueueMetricsModule.register({ registry })],
        providers: [Meals],
      });
      const meals = delay<{ meal: number }>('meals');
      await meals.schedule({ meal: 1 }, { id: 'hungry:rex' });
      const stats = await pollUntil(async () => {
        const now = await meals.stats();
        return now.completed === 4 ? now : undefined;
      }, 'four meals completed');
      expect(seen.map((ctx) => ctx.attempt)).toEqual([1, 1, 1, 1]);
      expect(stats).toMatchObject({ scheduledTotal: 4, fired: 4, completed: 4, retried: 0, scheduled: 0, active: 0 });
      expect(await meals.get('hungry:rex')).toBeNull();
      // Each handler's outcome, as this process reports it (event, log, metric): acknowledged, not a lost lease.
      const completed = await pollUntil(async () => {
        const found = /^nrq_tasks_completed_total\{queue="meals"\} (\S+)$/m.exec(await registry.metrics());
        return found && Number(found[1]) === 4 ? 4 : undefined;
      }, 'four completions in the metrics');
      expect(completed).toBe(4);
    });
  });

  describe('a task delivered again after its lease ran out', () => {
    const jobs = recordTasks<{ n: number }>('jobs');

    it('reports the time it was due as ctx.dueAt, and its lateness from it', async () => {
      const leaseMs = 1500;
      const producer = await harness.start({
        root: { consumers: false },
        delay: [{ name: 'jobs', shards: 1, leaseMs }],
      });
      const queue = producer.delay<{ n: number }>('jobs');
      const { runAt } = await queue.schedule({ n: 1 }, { id: 't' });
      // A worker claims it and dies without a word: its lease runs out.
      const lost = await queue.store.claim(0, 1);
      expect(lost.tasks.map((task) => [task.id, task.runAt, task.dueAt])).toEqual([['t', runAt, runAt]]);

      // Its lease ran out and a claim with no free slot put it back: the lag counts from its due time.
      await pollUntil(async () => (await queue.store.claim(0, 0), (await queue.stats()).scheduled === 1), 'the lapse');
      const waiting = await queue.stats();
      expect(waiting.nextDueAt).toBeGreaterThanOrEqual(runAt + leaseMs);
      expect(waiting.lagMs).toBeGreaterThanOrEqual(leaseMs);

      const registry = new Registry();
      await harness.start({
        prefix: producer.prefix,
        root: { idlePollMs: 500 },
        delay: [{ name: 'jobs', shards: 1, leaseMs }],
        imports: [QueueMetricsModule.register({ registry })],
        providers: [jobs.consumer],
        logger: new CapturedLogs(),
      });
      await jobs.untilTasks(1);
      const { ctx } = jobs.tasks[0];
      expect(ctx.attempt).toBe(2);
      expect(ctx.dueAt).toBe(runAt);
      // runAt: when this delivery became due, the lost lease's end.
      expect(ctx.runAt).toBeGreaterThanOrEqual(runAt + leaseMs);
      expect(ctx.firedAt - ctx.dueAt).toBeGreaterThanOrEqual(leaseMs);
      const lateness = await pollUntil(async () => {
        const text = await registry.metrics();
        const sum = /^nrq_task_lateness_seconds_sum\{queue="jobs"\} (\S+)$/m.exec(text);
        return sum ? Number(sum[1]) : undefined;
      }, 'the lateness histogram');
      expect(lateness).toBeGreaterThanOrEqual(leaseMs / 1000);
      process.stdout.write(
        `redelivered after its lease ran out: late ${ctx.firedAt - ctx.dueAt} ms from dueAt, ${ctx.firedAt - ctx.runAt} ms from runAt\n`,
      );
    });

    it('keeps its due time over a failed attempt only until the retry, which is due at its own time', async () => {
      const producer = await harness.start({
        root: { consumers: false },
        delay: [{ name: 'jobs', shards: 1, leaseMs: 200, backoff: { type: 'fixed', delayMs: 100 } }],
      });
      const queue = producer.delay<{ n: number }>('jobs');
      const { runAt } = await queue.schedule({ n: 1 }, { id: 't' });
      await queue.store.claim(0, 1);
      // Lapsed, then delivered again: that delivery keeps the first due time, and fails.
      const again = await pollUntil(async () => (await queue.store.claim(0, 1)).tasks[0], 'the lapsed task');
      expect([again.attempt, again.dueAt]).toEqual([2, runAt]);
      const failed = await queue.store.fail(0, 't', again.token, 100, 'Error: no');
      const retry = await pollUntil(async () => (await queue.store.claim(0, 1)).tasks[0], 'the retry');
      expect([retry.attempt, retry.dueAt, retry.runAt]).toEqual([3, failed!.at, failed!.at]);
      expect(await queue.get('t')).toMatchObject({ state: 'active', attempts: 3, runAt: failed!.at });
    });
  });
});
