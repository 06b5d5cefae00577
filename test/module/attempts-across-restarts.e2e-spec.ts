import { Injectable } from '@nestjs/common';
import {
  type BatchContext,
  type DelayContext,
  type FixedQueueOptions,
  HandlerTimeoutError,
  Recurring,
  type RecurringContext,
} from 'nestjs-redis-queues';
import { CapturedLogs } from '@test/support/faults';
import { recordBatches, recordTasks, useQueueApps, type QueueAppOptions } from '@test/support/fixtures';
import { pollUntil } from '@test/support/testing';

const TIMEOUT_MS = 300;
const MAX_ATTEMPTS = 3;

/** Handlers that hang and ignore their signal: the signal of each run is kept. */
const signals: AbortSignal[] = [];
const hang = (ctx: BatchContext | DelayContext | RecurringContext) => {
  signals.push(ctx.signal);
  return new Promise<void>(() => undefined);
};

/** The latest run is past handlerTimeoutMs: its signal aborted with a HandlerTimeoutError. */
const untilOverdue = (runs: number) =>
  pollUntil(
    () => signals.length === runs && signals[runs - 1].reason instanceof HandlerTimeoutError,
    `run ${runs} past handlerTimeoutMs`,
  );

const batches = recordBatches<{ n: number }>('events', { handlerTimeoutMs: TIMEOUT_MS }, (_m, ctx) => hang(ctx));
const tasks = recordTasks<{ n: number }>('tasks', { handlerTimeoutMs: TIMEOUT_MS }, (_p, ctx) => hang(ctx));
/** The same, with a deadline no restart of these tests reaches. */
const patient = recordTasks<{ n: number }>('tasks', { handlerTimeoutMs: 60_000 }, (_p, ctx) => hang(ctx));

const occurrences: { occurrence: number; attempt: number }[] = [];

@Injectable()
class PoisonJob {
  @Recurring({ name: 'poison', everyMs: 2_000, handlerTimeoutMs: TIMEOUT_MS, maxAttempts: MAX_ATTEMPTS })
  run(ctx: RecurringContext) {
    occurrences.push({ occurrence: ctx.occurrence, attempt: ctx.attempt });
    return hang(ctx);
  }
}

describe('attempts of a handler past handlerTimeoutMs, across app restarts', () => {
  const harness = useQueueApps();

  afterEach(() => {
    signals.length = 0;
    occurrences.length = 0;
  });

  /**
   * Starts an app, waits for its run `runs` to be past its deadline, and closes the app (which gives
   * the work back): a restart, as a rolling deploy makes one.
   */
  async function restart(options: QueueAppOptions, runs: number): Promise<void> {
    const { app } = await harness.start({ ...options, root: { shutdownTimeoutMs: 100, ...options.root } });
    await untilOverdue(runs);
    await harness.close(app);
  }

  /** An at-least-once FixedQueue of one shard, each batch handed out at once, to the hanging consumer. */
  function atLeastOnceEvents(options: Partial<FixedQueueOptions>): QueueAppOptions {
    const events = {
      name: 'events',
      shards: 1,
      maxWaitMs: 0,
      delivery: 'at-least-once' as const,
      maxAttempts: MAX_ATTEMPTS,
    };
    return { prefix: harness.prefix(), fixed: [{ ...events, ...options }], providers: [batches.consumer] };
  }

  it('FixedQueue at least once: attempts 1, 2, 3, then the batch is dead-lettered; each give-back counted in stats', async () => {
    const options = atLeastOnceEvents({ leaseMs: 30_000 });
    const producer = await harness.start({ ...options, root: { consumers: false } });
    const queue = producer.fixed<{ n: number }>('events');
    await queue.pushMany('poison', [{ n: 0 }, { n: 1 }]);
    for (let run = 1; run <= MAX_ATTEMPTS; run++) await restart(options, run);
    expect(batches.batches.map(({ ctx }) => ctx.attempt)).toEqual([1, 2, 3]);
    expect(await queue.stats()).toMatchObject({ givenBack: 3, redelivered: 4 });

    // The next app's claim finds the last attempt spent: dead-lettered, not delivered a fourth time.
    await harness.start(options);
    const dead = await pollUntil(async () => {
      const letters = await queue.deadLetters();
      return letters.length > 0 ? letters : undefined;
    }, 'the batch dead-lettered');
    expect(dead).toEqual([
      expect.objectContaining({
        group: 'poison',
        attempts: 3,
        lastError: expect.stringContaining('handler past handlerTimeoutMs had not settled when its process shut down'),
      }),
    ]);
    expect(batches.batches).toHaveLength(3);
  });

  it("FixedQueue onExhausted 'pause-group': the third counted give-back pauses the group, announced", async () => {
    const options = atLeastOnceEvents({ onExhausted: 'pause-group' });
    const producer = await harness.start({ ...options, root: { consumers: false } });
    const queue = producer.fixed<{ n: number }>('events');
    await queue.push('poison', { n: 0 });
    for (let run = 1; run <= MAX_ATTEMPTS; run++) await restart(options, run);
    const logs = new CapturedLogs();
    await harness.start({ ...options, logger: logs });
    await pollUntil(async () => (await queue.pausedGroups()).items.length === 1, 'the group paused');
    expect((await queue.pausedGroups()).items).toEqual([
      { group: 'poison', pausedAt: expect.any(Number), reason: 'exhausted' },
    ]);
    expect(batches.batches.map(({ ctx }) => ctx.attempt)).toEqual([1, 2, 3]);
    expect(logs.find('warn', /did not settle before its lease ran out; its group is paused/)).toHaveLength(1);
  });

  it('DelayQueue: attempts 1, 2, 3, then the task is dead-lettered', async () => {
    const options: QueueAppOptions = {
      prefix: harness.prefix(),
      delay: [{ name: 'tasks', shards: 1, maxAttempts: MAX_ATTEMPTS, visibilityTimeoutMs: 30_000 }],
      providers: [tasks.consumer],
    };
    const producer = await harness.start({ ...options, root: { consumers: false } });
    const queue = producer.delay<{ n: number }>('tasks');
    await queue.schedule({ n: 0 }, { id: 'poison' });
    for (let run = 1; run <= MAX_ATTEMPTS; run++) await restart(options, run);
    expect(tasks.tasks.map(({ ctx }) => ctx.attempt)).toEqual([1, 2, 3]);
    expect(await queue.get('poison')).toMatchObject({ state: 'scheduled', attempts: 3 });

    await harness.start(options);
    await pollUntil(async () => (await queue.get('poison'))?.state === 'dead', 'the task dead-lettered');
    expect(await queue.get('poison')).toMatchObject({
      attempts: 3,
      lastError: expect.stringContaining('handler past handlerTimeoutMs had not settled when its process shut down'),
    });
    // As many retries as when each attempt's process died (its lease ran out): the last attempt is no retry.
    expect(await queue.stats()).toMatchObject({ givenBack: 3, deadTotal: 1, fired: 3, retried: 2 });
    expect(tasks.tasks).toHaveLength(3);
  });

  it('@Recurring: attempts 1, 2, 3 of an occurrence, then it is given up and the schedule goes on', async () => {
    const options: QueueAppOptions = { prefix: harness.prefix(), providers: [PoisonJob] };
    for (let run = 1; run <= MAX_ATTEMPTS; run++) await restart(options, run);
    expect(occurrences.map(({ attempt }) => attempt)).toEqual([1, 2, 3]);
    expect(new Set(occurrences.map(({ occurrence }) => occurrence)).size).toBe(1);
    await restart(options, MAX_ATTEMPTS + 1);
    expect(occurrences[MAX_ATTEMPTS]).toEqual({ occurrence: expect.any(Number), attempt: 1 });
    expect(occurrences[MAX_ATTEMPTS].occurrence).toBeGreaterThan(occurrences[0].occurrence);
  });

  it('a give-back within handlerTimeoutMs is not counted', async () => {
    const options: QueueAppOptions = {
      prefix: harness.prefix(),
      delay: [{ name: 'tasks', shards: 1, maxAttempts: MAX_ATTEMPTS }],
      providers: [patient.consumer],
    };
    const producer = await harness.start({ ...options, root: { consumers: false } });
    const queue = producer.delay<{ n: number }>('tasks');
    await queue.schedule({ n: 0 }, { id: 'slow' });
    for (let run = 1; run <= MAX_ATTEMPTS + 1; run++) {
      const { app } = await harness.start({ ...options, root: { shutdownTimeoutMs: 50 } });
      await pollUntil(() => signals.length === run, `run ${run}`);
      await harness.close(app);
      expect(signals[run - 1].reason).not.toBeInstanceOf(HandlerTimeoutError);
    }
    expect(patient.tasks.map(({ ctx }) => ctx.attempt)).toEqual([1, 1, 1, 1]);
    expect(await queue.stats()).toMatchObject({ givenBack: 4, deadTotal: 0, retried: 0 });
  });
});
