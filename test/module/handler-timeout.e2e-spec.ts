import { Injectable } from '@nestjs/common';
import { ScheduleModule } from '@nestjs/schedule';
import { Registry } from 'prom-client';
import {
  BatchConsumer,
  type BatchContext,
  type BatchFailedEvent,
  HandlerTimeoutError,
  type HandlerTimeoutEvent,
  QueueDashboardModule,
  QueueEvents,
  QueueHealthIndicator,
  QueueMetricsModule,
  Recurring,
  type RecurringContext,
  type TaskFailedEvent,
} from 'nestjs-redis-queues';
import { CapturedLogs } from '@test/support/faults';
import { recordBatches, recordTasks, useQueueApps } from '@test/support/fixtures';
import { expectErrors, expectedErrors } from '@test/support/logs';
import { deferred, pollUntil } from '@test/support/testing';

const TIMEOUT_MS = 300;

/**
 * Handlers that ignore their signal: each waits for the test to let it go (`release`), then resolves or
 * throws as told. Their signals are kept, to check how they were aborted.
 */
class Gate {
  readonly signals: AbortSignal[] = [];
  private readonly waiting: { resolve: () => void; reject: (error: Error) => void }[] = [];

  hold(signal: AbortSignal): Promise<void> {
    this.signals.push(signal);
    return new Promise<void>((resolve, reject) => this.waiting.push({ resolve, reject }));
  }

  release(outcome: 'resolve' | Error = 'resolve'): void {
    for (const held of this.waiting.splice(0)) {
      if (outcome === 'resolve') held.resolve();
      else held.reject(outcome);
    }
  }

  get held(): number {
    return this.waiting.length;
  }

  reset(): void {
    this.release();
    this.signals.length = 0;
  }
}
const gate = new Gate();

/** When each handler of a group (or a task) ran: a second one starting before the first ended is a defect. */
class Overlaps {
  private readonly running = new Map<string, number>();
  readonly twice: string[] = [];

  async around<R>(key: string, work: () => Promise<R>): Promise<R> {
    const now = (this.running.get(key) ?? 0) + 1;
    this.running.set(key, now);
    if (now > 1) this.twice.push(key);
    try {
      return await work();
    } finally {
      this.running.set(key, (this.running.get(key) ?? 1) - 1);
    }
  }

  reset(): void {
    this.running.clear();
    this.twice.length = 0;
  }
}
const overlaps = new Overlaps();

const ordered = recordBatches<{ n: number }>('events', { handlerTimeoutMs: TIMEOUT_MS }, (messages, ctx) =>
  overlaps.around(ctx.group, async () => {
    if (ctx.group.startsWith('stuck') && messages[0].n === 0) await gate.hold(ctx.signal);
  }),
);
const failures: { error: unknown; group: string }[] = [];

@Injectable()
class FailureHook {
  @BatchConsumer('hooked', { handlerTimeoutMs: TIMEOUT_MS, onFailed: 'failed' })
  handle(_messages: unknown[], ctx: BatchContext) {
    return ctx.group === 'stuck' ? gate.hold(ctx.signal) : undefined;
  }

  failed(error: unknown, _messages: unknown[], ctx: BatchContext) {
    failures.push({ error, group: ctx.group });
  }
}

const tasks = recordTasks<{ n: number }>('timers', { handlerTimeoutMs: TIMEOUT_MS }, (_payload, ctx) =>
  overlaps.around(ctx.id, async () => {
    if (ctx.id === 'stuck' && ctx.attempt === 1) await gate.hold(ctx.signal);
  }),
);

describe('handlerTimeoutMs: a handler past its deadline frees its slot, never its group or task', () => {
  const harness = useQueueApps();
  const logs = new CapturedLogs();
  const fast = { maxWaitMs: 0, shards: 2 };

  afterEach(() => {
    gate.reset();
    overlaps.reset();
    failures.length = 0;
    logs.lines.length = 0;
  });

  it('ordered, concurrency 1, two apps: the other groups go on, the hung group waits for its handler to settle', async () => {
    // A lease shorter than the hang: only the heartbeat of the overdue handler keeps the group from the other app.
    const queue = { name: 'events', ...fast, batchSize: 5, leaseMs: 600 };
    const { fixed, app } = await harness.start({ fixed: [queue], providers: [ordered.consumer], logger: logs });
    // Nest's logger is one per process: the second app logs to the same lines.
    const second = await harness.start({ fixed: [queue], providers: [ordered.consumer], logger: logs });
    const failed: BatchFailedEvent[] = [];
    const timeouts: HandlerTimeoutEvent[] = [];
    for (const { app: each } of [{ app }, second]) {
      each.get(QueueEvents).on('batch.failed', (event) => failed.push(event));
      each.get(QueueEvents).on('handler.timeout', (event) => timeouts.push(event));
    }
    const events = fixed<{ n: number }>('events');
    await events.pushMany(
      'stuck',
      Array.from({ length: 5 }, (_, n) => ({ n })),
    );
    await pollUntil(() => gate.held === 1, 'the hung batch');
    await pollUntil(() => timeouts.length === 1, 'the timeout');
    // Pushed while the first app's only slot was given up by a handler that does not settle.
    for (let g = 0; g < 20; g++) await events.push(`g${g}`, { n: g });
    await events.push('stuck', { n: 5 });
    await ordered.untilMessages(5 + 20, 10_000);

    // Three leases later the group is still held: its next batch waits. The app that has it says so.
    const health = await pollUntil(async () => {
      for (const { app: each } of [{ app }, second]) {
        const result = await each.get(QueueHealthIndicator).isHealthy('queues');
        const overdue = result.queues.queues?.events?.overdueHandlers;
        if (overdue?.[0] !== undefined && overdue[0].runningMs > 3 * 600) return result;
      }
      return undefined;
    }, 'three leases of overdue handler');
    expect(health.queues.status).toBe('up');
    expect(health.queues.queues?.events).toMatchObject({
      timedOutHandlers: 1,
      overdueHandlers: [{ consumer: 'RecordingConsumer.handle', group: 'stuck' }],
    });
    expect(ordered.batches.filter((batch) => batch.group === 'stuck')).toHaveLength(1);
    expect(gate.signals[0].aborted).toBe(true);
    expect(gate.signals[0].reason).toBeInstanceOf(HandlerTimeoutError);
    expect(timeouts).toEqual([
      { queue: 'events', consumer: 'RecordingConsumer.handle', group: 'stuck', timeoutMs: TIMEOUT_MS },
    ]);
    const warnings = logs.find('warn', /did not settle in time/);
    expect(warnings).toHaveLength(1);
    expect(warnings[0]).toMatch(/RecordingConsumer\.handle/);
    expect(warnings[0]).toMatch(/group[=:" ]+stuck/);
    expect(warnings[0]).toMatch(/300/);

    // It settles: its outcome counts (at-most-once: completed), then the group's next batch comes.
    gate.release();
    await ordered.untilMessages(5 + 20 + 1);
    const stuck = ordered.batches.filter((batch) => batch.group === 'stuck');
    expect(stuck.map((batch) => batch.messages.map((m) => m.n))).toEqual([[0, 1, 2, 3, 4], [5]]);
    expect(failed).toEqual([]);
    expect(overlaps.twice).toEqual([]);
    await pollUntil(() => logs.find('log', /overdue handler settled/).length === 1, 'the settle logged');
  });

  it('at-most-once: a hung batch that throws at last fails then (onFailed), and no retry ran beside it', async () => {
    const { fixed } = await harness.start({ fixed: [{ name: 'hooked', ...fast }], providers: [FailureHook] });
    await fixed('hooked').push('stuck', 1);
    await pollUntil(() => gate.held === 1 && gate.signals[0].aborted, 'the overdue handler');
    expect(failures).toEqual([]);
    expectErrors(/batch failed after its last attempt group="stuck".*upstream gave up/);
    gate.release(new Error('upstream gave up'));
    await pollUntil(() => failures.length === 1, 'onFailed');
    expect(failures[0].group).toBe('stuck');
    expect((failures[0].error as Error).message).toBe('upstream gave up');
    expect(gate.signals).toHaveLength(1);
  });

  it('at-least-once: the batch is delivered again only once its overdue handler threw, and dead-lettered when out of attempts', async () => {
    expectErrors(/batch failed its last attempt and is dead-lettered group="g".*still failing/);
    const attempts: number[] = [];
    const retried = recordBatches<{ n: number }>('retried', { handlerTimeoutMs: TIMEOUT_MS }, async (_m, ctx) => {
      attempts.push(ctx.attempt);
      if (ctx.attempt === 1) await gate.hold(ctx.signal);
    });
    const buried = recordBatches<{ n: number }>('buried', { handlerTimeoutMs: TIMEOUT_MS }, async (_m, ctx) => {
      await gate.hold(ctx.signal);
    });
    const atLeastOnce = {
      ...fast,
      delivery: 'at-least-once' as const,
      backoff: { type: 'exponential' as const, delayMs: 50 },
      leaseMs: 600,
    };
    const { fixed } = await harness.start({
      fixed: [
        { name: 'retried', ...atLeastOnce },
        { name: 'buried', ...atLeastOnce, maxAttempts: 1 },
      ],
      providers: [retried.consumer, buried.consumer],
    });
    await fixed('retried').pushMany('g', [{ n: 1 }, { n: 2 }]);
    await fixed('buried').push('g', { n: 3 });
    await pollUntil(() => gate.held === 2 && gate.signals.every((signal) => signal.aborted), 'both overdue');
    // Past three leases: nothing delivered again, nothing buried while they run.
    const heldSince = Date.now();
    await pollUntil(() => Date.now() - heldSince > 3 * 600, 'three leases');
    expect(attempts).toEqual([1]);
    expect(await fixed('buried').deadLetters(10)).toEqual([]);

    gate.release(new Error('still failing'));
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
    expect(dead.lastError).toMatch(/still failing/);
    await pollUntil(() => expectedErrors().length === 1, 'the dead batch logged');
    await pollUntil(async () => (await fixed('retried').size('g')) === 0, 'attempt 2 acknowledged');
  });

  it('at-least-once: an overdue handler that resolves at last acknowledges its batch', async () => {
    const late = recordBatches<{ n: number }>('late', { handlerTimeoutMs: TIMEOUT_MS }, (_m, ctx) =>
      gate.hold(ctx.signal),
    );
    const { fixed } = await harness.start({
      fixed: [{ name: 'late', ...fast, delivery: 'at-least-once', leaseMs: 600 }],
      providers: [late.consumer],
    });
    await fixed('late').push('g', { n: 1 });
    await pollUntil(() => gate.held === 1 && gate.signals[0].aborted, 'the overdue handler');
    gate.release();
    await pollUntil(async () => (await fixed('late').size('g')) === 0, 'the acknowledgement');
    expect(late.batches.map((batch) => batch.ctx.attempt)).toEqual([1]);
  });

  it('DelayQueue: other tasks run meanwhile (concurrency 1); the task is retried only once its handler threw', async () => {
    const registry = new Registry();
    const { delay, app } = await harness.start({
      delay: [{ name: 'timers', shards: 2, leaseMs: 600, backoff: { type: 'fixed', delayMs: 50 } }],
      providers: [tasks.consumer],
      imports: [QueueMetricsModule.register({ registry }), QueueDashboardModule.register({})],
      logger: logs,
    });
    await app.listen(0, '127.0.0.1');
    const base = (await app.getUrl()).replace('[::1]', '127.0.0.1');
    const failed: TaskFailedEvent[] = [];
    app.get(QueueEvents).on('task.failed', (event) => failed.push(event));
    const timers = delay<{ n: number }>('timers');
    await timers.schedule({ n: 0 }, { id: 'stuck' });
    await pollUntil(() => gate.held === 1, 'the hung task');
    for (let n = 1; n <= 20; n++) await timers.schedule({ n }, { id: `t${n}` });
    await tasks.untilTasks(21);
    expect(logs.find('warn', /did not settle in time/)).toEqual([expect.stringMatching(/id[=:" ]+stuck/)]);
    expect(await registry.metrics()).toMatch(/^nrq_handler_timeouts_total\{queue="timers"\} 1$/m);
    expect(await registry.metrics()).toMatch(/^nrq_handlers_overdue\{queue="timers"\} 1$/m);

    // Held past three leases: still active, still attempt 1.
    const since = Date.now();
    await pollUntil(() => Date.now() - since > 3 * 600, 'three leases');
    expect((await timers.get('stuck'))?.state).toBe('active');
    expect(tasks.tasks.filter((task) => task.id === 'stuck')).toHaveLength(1);
    // The dashboard shows it, in its live data and in the page as served.
    const overview = (await (await fetch(`${base}/queues/api`)).json()) as {
      queues: { name: string; overdue: { id: string; consumer: string; overdueMs: number }[] }[];
    };
    const [held] = overview.queues.find((queue) => queue.name === 'timers')!.overdue;
    expect(held).toMatchObject({ id: 'stuck', consumer: 'RecordingConsumer.handle' });
    expect(held.overdueMs).toBeGreaterThan(3 * 600 - TIMEOUT_MS);
    const page = await (await fetch(`${base}/queues`)).text();
    expect(page).toMatch(/handlers past their timeout.*<td>stuck<\/td><td>RecordingConsumer\.handle<\/td>/s);

    gate.release(new Error('too late'));
    await tasks.untilTasks(22);
    expect(tasks.tasks.filter((task) => task.id === 'stuck').map((task) => task.ctx.attempt)).toEqual([1, 2]);
    // The event follows the failure's reply, which on a busy machine can be handled after the retry reached the handler.
    await pollUntil(() => failed.length > 0, 'the failure reported');
    expect(failed.map((event) => [event.id, (event.error as Error).message])).toEqual([['stuck', 'too late']]);
    await pollUntil(async () => (await timers.get('stuck')) === null, 'the retried task to be acknowledged');
    expect(overlaps.twice).toEqual([]);
    expect(await registry.metrics()).toMatch(/^nrq_handlers_overdue\{queue="timers"\} 0$/m);
  });

  it('more overdue handlers than its concurrency: the consumer stops claiming, says why, and claims again once they settle', async () => {
    const { fixed, app } = await harness.start({
      fixed: [{ name: 'events', ...fast, batchSize: 5 }],
      providers: [ordered.consumer],
      logger: logs,
    });
    const events = fixed<{ n: number }>('events');
    await events.push('stuck-1', { n: 0 });
    await pollUntil(() => gate.held === 1 && gate.signals[0].aborted, 'the first overdue handler');
    await events.push('stuck-2', { n: 0 });
    await pollUntil(() => gate.held === 2 && gate.signals[1].aborted, 'the second overdue handler');
    await pollUntil(() => logs.find('warn', /stops claiming/).length === 1, 'the stop logged');
    expect(logs.find('warn', /stops claiming/)[0]).toMatch(/2 handlers past handlerTimeoutMs.*concurrency \(1\)/);
    const health = await app.get(QueueHealthIndicator).isHealthy('queues');
    expect(health.queues.status).toBe('down');
    expect(health.queues.message).toMatch(/RecordingConsumer\.handle stopped claiming: 2 handlers past/);

    await events.push('other', { n: 1 });
    const since = Date.now();
    await pollUntil(() => Date.now() - since > 500, 'a while');
    expect(ordered.batches.map((batch) => batch.group)).toEqual(['stuck-1', 'stuck-2']);
    gate.release();
    await ordered.untilMessages(3);
    expect(ordered.batches.map((batch) => batch.group)).toEqual(['stuck-1', 'stuck-2', 'other']);
    expect(logs.find('log', /claiming again: overdue handlers settled/)).toHaveLength(1);
  });

  it('is validated like the other consumer options', async () => {
    const bad = recordBatches('events', { handlerTimeoutMs: 0 });
    await expect(harness.start({ fixed: [{ name: 'events' }], providers: [bad.consumer] })).rejects.toThrow(
      /handlerTimeoutMs/,
    );
  });
});

const recurringRuns: { started: number; ended?: number }[] = [];

@Injectable()
class SlowJob {
  // Each run takes longer than its timeout and than its period, and ignores its signal.
  @Recurring({ name: 'slow-job', everyMs: 200, handlerTimeoutMs: 100 })
  async run(_ctx: RecurringContext) {
    const run: { started: number; ended?: number } = { started: Date.now() };
    recurringRuns.push(run);
    await new Promise((resolve) => setTimeout(resolve, 500));
    run.ended = Date.now();
  }
}

describe('@Recurring past its handlerTimeoutMs', () => {
  const harness = useQueueApps();

  afterEach(() => {
    recurringRuns.length = 0;
  });

  it('never runs two runs of one schedule at once, in one app or across two', async () => {
    const first = await harness.start({ providers: [SlowJob] });
    await harness.start({ prefix: first.prefix, providers: [SlowJob] });
    await pollUntil(() => recurringRuns.filter((run) => run.ended).length >= 4, 'four runs', 15_000);
    for (let i = 1; i < recurringRuns.length; i++)
      expect(recurringRuns[i].started).toBeGreaterThanOrEqual(recurringRuns[i - 1].ended ?? Infinity);
  });
});

describe('scheduled consumers (intervalMs) with a handler that never settles', () => {
  const harness = useQueueApps();
  const drained = recordBatches<{ n: number }>(
    'digest',
    { intervalMs: 100, concurrency: 2, handlerTimeoutMs: 60_000 },
    (_m, ctx) => (ctx.group === 'stuck' ? gate.hold(ctx.signal) : undefined),
  );

  afterEach(() => gate.reset());

  it('later ticks drain the other groups while it runs; close() gives its batch back within shutdownTimeoutMs', async () => {
    const consumer = await harness.start({
      fixed: [{ name: 'digest', maxWaitMs: 0, shards: 2, delivery: 'at-least-once', leaseMs: 30_000 }],
      providers: [drained.consumer],
      imports: [ScheduleModule.forRoot()],
      root: { shutdownTimeoutMs: 300, commandTimeoutMs: 1000 },
    });
    const queue = consumer.fixed<{ n: number }>('digest');
    await queue.push('stuck', { n: 0 });
    await pollUntil(() => gate.held === 1, 'the hung batch');
    for (let round = 1; round <= 3; round++) {
      for (let g = 0; g < 10; g++) await queue.push(`g${g}`, { n: round });
      await drained.untilMessages(1 + 10 * round, 5000);
    }

    const closed = deferred<number>();
    const started = Date.now();
    void harness.close(consumer.app).then(() => closed.resolve(Date.now() - started));
    expect(await closed.promise).toBeLessThan(300 + 1000);
    expect(gate.signals[0].aborted).toBe(true);

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
