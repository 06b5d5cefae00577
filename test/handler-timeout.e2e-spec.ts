import { Injectable } from '@nestjs/common';
import { ScheduleModule } from '@nestjs/schedule';
import { Registry } from 'prom-client';
import {
  BatchConsumer,
  type BatchContext,
  type BatchFailedEvent,
  HandlerTimeoutError,
  type HandlerTimeoutEvent,
  QueueEvents,
  QueueHealthIndicator,
  QueueMetricsModule,
  type TaskFailedEvent,
} from 'nestjs-redis-queues';
import { CapturedLogs } from './support/faults';
import { recordBatches, recordTasks, useQueueApps } from './support/fixtures';
import { expectErrors, expectedErrors } from './support/logs';
import { deferred, pollUntil } from './support/testing';

const TIMEOUT_MS = 300;
/** Resolves never: a handler that hangs. */
const never = () => new Promise<never>(() => undefined);

/** Signals handed to hung handlers, to check how they were aborted. */
const hungSignals: AbortSignal[] = [];
const hang = (signal: AbortSignal) => {
  hungSignals.push(signal);
  return never();
};

const ordered = recordBatches<{ n: number }>('events', { handlerTimeoutMs: TIMEOUT_MS }, (messages, ctx) =>
  ctx.group === 'stuck' && ctx.attempt === 1 && messages[0].n === 0 ? hang(ctx.signal) : undefined,
);
const failures: { error: unknown; group: string }[] = [];

@Injectable()
class FailureHook {
  @BatchConsumer('hooked', { handlerTimeoutMs: TIMEOUT_MS, onFailed: 'failed' })
  handle(messages: unknown[], ctx: BatchContext) {
    return ctx.group === 'stuck' ? hang(ctx.signal) : undefined;
  }

  failed(error: unknown, _messages: unknown[], ctx: BatchContext) {
    failures.push({ error, group: ctx.group });
  }
}

const tasks = recordTasks<{ n: number }>('timers', { handlerTimeoutMs: TIMEOUT_MS }, (_payload, ctx) =>
  ctx.id === 'stuck' && ctx.attempt === 1 ? hang(ctx.signal) : undefined,
);

describe('handlerTimeoutMs: a handler that never settles is abandoned', () => {
  const harness = useQueueApps();
  const logs = new CapturedLogs();
  const fast = { maxWaitMs: 0, shards: 2 };

  afterEach(() => {
    hungSignals.length = 0;
    failures.length = 0;
    logs.lines.length = 0;
  });

  it('frees the only slot (concurrency 1): the other groups go on, the hung group gets its next batch', async () => {
    const { fixed, app } = await harness.start({
      fixed: [{ name: 'events', ...fast, batchSize: 5 }],
      providers: [ordered.consumer],
      logger: logs,
    });
    const failed: BatchFailedEvent[] = [];
    const timeouts: HandlerTimeoutEvent[] = [];
    app.get(QueueEvents).on('batch.failed', (event) => failed.push(event));
    app.get(QueueEvents).on('handler.timeout', (event) => timeouts.push(event));
    const queue = fixed<{ n: number }>('events');
    await queue.pushMany(
      'stuck',
      Array.from({ length: 5 }, (_, n) => ({ n })),
    );
    await pollUntil(() => hungSignals.length === 1, 'the hung batch');
    // Pushed while the only slot is taken by a handler that never settles.
    for (let g = 0; g < 20; g++) await queue.push(`g${g}`, { n: g });
    await queue.push('stuck', { n: 5 });

    await ordered.untilMessages(5 + 20 + 1, 10_000);
    const stuck = ordered.batches.filter((batch) => batch.group === 'stuck');
    expect(stuck.map((batch) => batch.messages.map((m) => m.n))).toEqual([[0, 1, 2, 3, 4], [5]]);
    expect(hungSignals[0].aborted).toBe(true);
    expect(hungSignals[0].reason).toBeInstanceOf(HandlerTimeoutError);
    expect((hungSignals[0].reason as HandlerTimeoutError).timeoutMs).toBe(TIMEOUT_MS);
    // At-most-once: the batch failed for good, with the timeout as its error.
    expect(failed).toHaveLength(1);
    expect(failed[0]).toMatchObject({ group: 'stuck', size: 5 });
    expect(failed[0].error).toBe(hungSignals[0].reason);
    expect(timeouts).toEqual([
      { queue: 'events', consumer: 'RecordingConsumer.handle', group: 'stuck', timeoutMs: TIMEOUT_MS },
    ]);
    const warnings = logs.find('warn', /did not settle in time/);
    expect(warnings).toHaveLength(1);
    expect(warnings[0]).toMatch(/RecordingConsumer\.handle/);
    expect(warnings[0]).toMatch(/group[=:" ]+stuck/);
    expect(warnings[0]).toMatch(/300/);
    const health = await app.get(QueueHealthIndicator).isHealthy('queues');
    expect(health.queues).toMatchObject({ queues: { events: { timedOutHandlers: 1 } } });
  });

  it('at-most-once: onFailed gets the HandlerTimeoutError, and no in-process retry runs beside the hung handler', async () => {
    const { fixed } = await harness.start({ fixed: [{ name: 'hooked', ...fast }], providers: [FailureHook] });
    await fixed('hooked').push('stuck', 1);
    await pollUntil(() => failures.length === 1, 'onFailed');
    expect(failures[0].group).toBe('stuck');
    expect(failures[0].error).toBeInstanceOf(HandlerTimeoutError);
    expect(hungSignals).toHaveLength(1);
  });

  it('at-least-once: the batch is delivered again (attempt 2) after the backoff, then dead-lettered when out of attempts', async () => {
    expectErrors(/batch failed its last attempt and is dead-lettered group="g".*handlerTimeoutMs/);
    const retried = recordBatches<{ n: number }>('retried', { handlerTimeoutMs: TIMEOUT_MS }, (_m, ctx) =>
      ctx.attempt === 1 ? hang(ctx.signal) : undefined,
    );
    const buried = recordBatches<{ n: number }>('buried', { handlerTimeoutMs: TIMEOUT_MS }, (_m, ctx) =>
      hang(ctx.signal),
    );
    const atLeastOnce = { ...fast, delivery: 'at-least-once' as const, retryDelayMs: 50, leaseMs: 10_000 };
    const { fixed } = await harness.start({
      fixed: [
        { name: 'retried', ...atLeastOnce },
        { name: 'buried', ...atLeastOnce, maxAttempts: 1 },
      ],
      providers: [retried.consumer, buried.consumer],
    });
    await fixed('retried').pushMany('g', [{ n: 1 }, { n: 2 }]);
    await fixed('buried').push('g', { n: 3 });
    await retried.untilMessages(4);
    expect(retried.batches.map((batch) => [batch.ctx.attempt, batch.messages])).toEqual([
      [1, [{ n: 1 }, { n: 2 }]],
      [2, [{ n: 1 }, { n: 2 }]],
    ]);
    const [dead] = await pollUntil(async () => {
      const letters = await fixed('buried').deadLetters(10);
      return letters.length > 0 ? letters : undefined;
    }, 'the dead batch');
    expect(dead.messages).toEqual([{ n: 3 }]);
    expect(dead.lastError).toMatch(/HandlerTimeoutError.*handlerTimeoutMs/);
    await pollUntil(() => expectedErrors().length === 1, 'the dead batch logged');
    // The first, abandoned handler resolving later changes nothing.
    expect(await fixed('retried').size('g')).toBe(0);
  });

  it('DelayQueue: the task is retried after the backoff, and other tasks run meanwhile (concurrency 1)', async () => {
    const registry = new Registry();
    const { delay, app } = await harness.start({
      delay: [{ name: 'timers', shards: 2, backoff: { type: 'fixed', delayMs: 50 } }],
      providers: [tasks.consumer],
      imports: [QueueMetricsModule.register({ registry })],
      logger: logs,
    });
    const failed: TaskFailedEvent[] = [];
    app.get(QueueEvents).on('task.failed', (event) => failed.push(event));
    const timers = delay<{ n: number }>('timers');
    await timers.schedule({ n: 0 }, { id: 'stuck' });
    await pollUntil(() => hungSignals.length === 1, 'the hung task');
    for (let n = 1; n <= 20; n++) await timers.schedule({ n }, { id: `t${n}` });

    await tasks.untilTasks(22);
    const stuck = tasks.tasks.filter((task) => task.id === 'stuck').map((task) => task.ctx.attempt);
    expect(stuck).toEqual([1, 2]);
    expect(new Set(tasks.ids()).size).toBe(21);
    expect(failed.map((event) => [event.id, event.error instanceof HandlerTimeoutError])).toEqual([['stuck', true]]);
    expect(logs.find('warn', /did not settle in time/)).toEqual([expect.stringMatching(/id[=:" ]+stuck/)]);
    // Its second attempt's acknowledgement deletes it.
    await pollUntil(async () => (await timers.get('stuck')) === null, 'the retried task to be acknowledged');
    expect(await registry.metrics()).toMatch(/^nrq_handler_timeouts_total\{queue="timers"\} 1$/m);
  });

  it('is validated like the other consumer options', async () => {
    const bad = recordBatches('events', { handlerTimeoutMs: 0 });
    await expect(harness.start({ fixed: [{ name: 'events' }], providers: [bad.consumer] })).rejects.toThrow(
      /handlerTimeoutMs/,
    );
  });
});

describe('scheduled consumers (intervalMs) with a handler that never settles', () => {
  const harness = useQueueApps();
  const drained = recordBatches<{ n: number }>(
    'digest',
    { intervalMs: 100, concurrency: 2, handlerTimeoutMs: 60_000 },
    (_m, ctx) => (ctx.group === 'stuck' ? hang(ctx.signal) : undefined),
  );

  afterEach(() => {
    hungSignals.length = 0;
  });

  it('later ticks drain the other groups while it runs; close() gives its batch back within shutdownTimeoutMs', async () => {
    const consumer = await harness.start({
      fixed: [{ name: 'digest', maxWaitMs: 0, shards: 2, delivery: 'at-least-once', leaseMs: 30_000 }],
      providers: [drained.consumer],
      imports: [ScheduleModule.forRoot()],
      root: { shutdownTimeoutMs: 300, commandTimeoutMs: 1000 },
    });
    const queue = consumer.fixed<{ n: number }>('digest');
    await queue.push('stuck', { n: 0 });
    await pollUntil(() => hungSignals.length === 1, 'the hung batch');
    for (let round = 1; round <= 3; round++) {
      for (let g = 0; g < 10; g++) await queue.push(`g${g}`, { n: round });
      await drained.untilMessages(1 + 10 * round, 5000);
    }

    const closed = deferred<number>();
    const started = Date.now();
    void harness.close(consumer.app).then(() => closed.resolve(Date.now() - started));
    expect(await closed.promise).toBeLessThan(300 + 1000);
    expect(hungSignals[0].aborted).toBe(true);

    // Given back: another process gets the batch now, not when its 30 s lease runs out.
    const other = recordBatches<{ n: number }>('digest', { handlerTimeoutMs: 60_000 });
    await harness.start({
      prefix: consumer.prefix,
      fixed: [{ name: 'digest', maxWaitMs: 0, shards: 2, delivery: 'at-least-once', leaseMs: 30_000 }],
      providers: [other.consumer],
    });
    await other.untilMessages(1, 5000);
    expect(other.batches.map((batch) => [batch.group, batch.messages])).toEqual([['stuck', [{ n: 0 }]]]);
  });
});
