import { Injectable, type Type } from '@nestjs/common';
import {
  BatchConsumer,
  type BatchContext,
  DelayConsumer,
  OnQueueEvent,
  QueueConfigError,
  QueueEvents,
  type QueueEventMap,
  type QueueEventName,
  UnknownQueueError,
} from 'nestjs-redis-queues';
import { CapturedLogs, startRedis } from '@test/support/faults';
import { useQueueApps } from '@test/support/fixtures';
import { expectErrors, expectedErrors } from '@test/support/logs';
import { pollUntil, uniquePrefix } from '@test/support/testing';

type Seen = { [E in QueueEventName]?: QueueEventMap[E][] };

@Injectable()
class Reporter {
  static failing = new Set<string>();

  @BatchConsumer('events', { maxAttempts: 2, backoff: { type: 'exponential', delayMs: 10 } })
  async report(_messages: unknown[], ctx: BatchContext) {
    if (Reporter.failing.has(ctx.group)) throw new Error(`upstream refused ${ctx.group}`);
  }
}

@Injectable()
class Worker {
  @DelayConsumer('tasks', { concurrency: 4 })
  async run(payload: { fail?: boolean }) {
    if (payload.fail) throw new Error('cannot feed');
  }
}

/** Listens through the decorator: dead tasks of every queue, failed batches of 'events' only. */
@Injectable()
class Alerts {
  static seen: { event: string; payload: any }[] = [];

  @OnQueueEvent('task.dead')
  @OnQueueEvent('batch.failed', { queue: 'events' })
  alert(payload: unknown) {
    Alerts.seen.push({ event: (payload as { id?: string }).id ? 'task.dead' : 'batch.failed', payload });
  }

  @OnQueueEvent('batch.completed', { queue: 'other' })
  other(payload: unknown) {
    Alerts.seen.push({ event: 'other', payload });
  }
}

describe('QueueEvents', () => {
  const harness = useQueueApps();

  afterEach(() => {
    Reporter.failing.clear();
    Alerts.seen = [];
  });

  async function start(
    prefix: string,
    opts: { providers?: Type[]; url?: string; logs?: CapturedLogs; maxAgeMs?: number } = {},
  ) {
    const { app, fixed, delay } = await harness.start({
      connection: opts.url,
      prefix,
      root: { idlePollMs: 500, commandTimeoutMs: 1000 },
      fixed: [
        { name: 'events', shards: 2, capacity: 5, batchSize: 5, maxWaitMs: 50, maxAgeMs: opts.maxAgeMs },
        { name: 'other', shards: 1, batchSize: 5, maxWaitMs: 50 },
      ],
      delay: [{ name: 'tasks', shards: 2, maxAttempts: 2, backoff: { type: 'fixed', delayMs: 50 } }],
      providers: opts.providers ?? [Reporter, Worker, Alerts],
      logger: opts.logs,
    });
    const events = app.get(QueueEvents);
    const seen: Seen = {};
    const record = (...names: QueueEventName[]) =>
      names.forEach((name) => events.on(name, (payload) => void (seen[name] ??= [] as never[]).push(payload as never)));
    return {
      app,
      events,
      seen,
      record,
      fixed: fixed<{ n: number }>('events'),
      other: fixed<{ n: number }>('other'),
      tasks: delay<{ fail?: boolean }>('tasks'),
    };
  }

  it('tells pushes, drops, completed and failed batches, with their figures', async () => {
    expectErrors(/batch failed after its last attempt group="bad"/);
    const prefix = uniquePrefix();
    const { fixed, other, seen, record } = await start(prefix, { providers: [] });
    record('messages.pushed', 'messages.dropped');
    // Capacity 5: a group given 8 messages in one turn drops its 3 oldest.
    await Promise.all([
      ...Array.from({ length: 8 }, (_, n) => fixed.push('full', { n })),
      fixed.push('calm', { n: 0 }),
    ]);
    const pushed = seen['messages.pushed']!;
    expect(pushed.reduce((sum, e) => sum + e.count, 0)).toBe(9);
    expect(pushed.reduce((sum, e) => sum + e.dropped, 0)).toBe(3);
    expect(pushed.every((e) => e.queue === 'events')).toBe(true);
    expect(seen['messages.dropped']).toEqual([{ queue: 'events', group: 'full', count: 3 }]);

    // Consumers in a second application: 'bad' fails twice (maxAttempts: 2), the others complete.
    Reporter.failing.add('bad');
    await fixed.pushMany('bad', [{ n: 1 }, { n: 2 }]);
    await other.push('o', { n: 1 });
    const consumer = await start(prefix);
    consumer.record('batch.completed', 'batch.failed');
    await pollUntil(
      () => (consumer.seen['batch.completed']?.length ?? 0) >= 2 && consumer.seen['batch.failed']?.length === 1,
      'batches handled',
    );
    const completed = consumer.seen['batch.completed']!.filter((e) => e.queue === 'events');
    expect(completed.map((e) => [e.group, e.size]).sort()).toEqual([
      ['calm', 1],
      ['full', 5],
    ]);
    for (const e of completed) {
      expect(e).toMatchObject({ attempts: 1, consumer: 'Reporter.report' });
      expect(e.durationMs).toBeGreaterThanOrEqual(0);
      expect(e.claimedAt).toBeGreaterThan(0);
    }
    const [failed] = consumer.seen['batch.failed']!;
    expect(failed).toMatchObject({ queue: 'events', group: 'bad', size: 2, attempts: 2 });
    expect((failed.error as Error).message).toBe('upstream refused bad');
    // The decorated listeners: the failed batch of 'events'; none of the completed ones, which were not of 'other'.
    await pollUntil(() => Alerts.seen.length === 1, 'the decorated listener');
    expect(Alerts.seen).toEqual([{ event: 'batch.failed', payload: failed }]);
    expect(expectedErrors()).toHaveLength(1);
  });

  it('tells expired messages when a consumer finds them', async () => {
    const prefix = uniquePrefix();
    const producer = await start(prefix, { providers: [], maxAgeMs: 100 });
    await Promise.all([producer.fixed.pushMany('old', [{ n: 1 }, { n: 2 }]), producer.fixed.push('mixed', { n: 0 })]);
    const pushedAt = Date.now();
    // Messages become too old by Redis' clock; a consumer started then discards them on its claim.
    await pollUntil(() => Date.now() - pushedAt > 150, 'the messages to age');
    const consumer = await start(prefix, { providers: [Reporter], maxAgeMs: 100 });
    consumer.record('messages.expired', 'batch.completed');
    // 'mixed' has a young message behind its old ones: one batch, of the young one only.
    await consumer.fixed.push('mixed', { n: 3 });
    await pollUntil(
      () => consumer.seen['messages.expired']?.length === 2 && consumer.seen['batch.completed']?.length === 1,
      'the claims',
    );
    expect(consumer.seen['messages.expired']!.sort((a, b) => a.group.localeCompare(b.group))).toEqual([
      { queue: 'events', group: 'mixed', count: 1 },
      { queue: 'events', group: 'old', count: 2 },
    ]);
    expect(consumer.seen['batch.completed']).toMatchObject([{ group: 'mixed', size: 1 }]);
  });

  it('tells scheduled, fired, completed, retried and dead tasks', async () => {
    expectErrors(/task failed its last attempt and is dead-lettered id="doomed"/);
    const { tasks, seen, record } = await start(uniquePrefix());
    record('tasks.scheduled', 'task.fired', 'task.completed', 'task.failed', 'task.dead');
    const [ok] = await Promise.all([
      tasks.schedule({}, { id: 'ok' }),
      tasks.schedule({ fail: true }, { id: 'doomed' }),
    ]);
    await pollUntil(
      () => seen['task.dead']?.length === 1 && seen['task.completed']?.length === 1,
      'the tasks to settle',
    );

    expect(seen['tasks.scheduled']!.reduce((sum, e) => sum + e.count, 0)).toBe(2);
    const completed = seen['task.completed']![0];
    expect(completed).toMatchObject({ queue: 'tasks', id: 'ok', attempt: 1, runAt: ok.runAt, consumer: 'Worker.run' });
    expect(completed.firedAt).toBeGreaterThanOrEqual(ok.runAt);
    expect(completed.durationMs).toBeGreaterThanOrEqual(0);

    const [failed] = seen['task.failed']!;
    expect(failed).toMatchObject({ id: 'doomed', attempt: 1 });
    expect((failed.error as Error).message).toBe('cannot feed');
    // Fixed backoff of 50 ms from the failure, by Redis' clock.
    expect(failed.nextRunAt).toBeGreaterThanOrEqual(failed.firedAt + 50);

    const [dead] = seen['task.dead']!;
    expect(dead).toMatchObject({ id: 'doomed', attempt: 2, runAt: failed.nextRunAt });
    expect(dead.diedAt).toBeGreaterThanOrEqual(dead.firedAt);
    expect(seen['task.fired']!.map((e) => `${e.id}#${e.attempt}`).sort()).toEqual(['doomed#1', 'doomed#2', 'ok#1']);
    expect(Alerts.seen).toEqual([{ event: 'task.dead', payload: dead }]);
    expect((await tasks.get('doomed'))?.state).toBe('dead');
    expect(expectedErrors()).toHaveLength(1);
  });

  it('logs a listener that throws or rejects, and the queues carry on', async () => {
    const logs = new CapturedLogs();
    const { tasks, events, seen, record } = await start(uniquePrefix(), { logs });
    events.on('task.fired', () => {
      throw new Error('listener bug');
    });
    events.on('task.completed', async () => {
      throw new Error('async listener bug');
    });
    record('task.completed');
    await tasks.schedule({}, { id: 'a' });
    await pollUntil(() => seen['task.completed']?.length === 1, 'the task to complete');
    await pollUntil(() => logs.find('error', /async listener bug/).length === 1, 'the rejection logged');
    expect(logs.find('error', /A listener of "task.fired" threw: Error: listener bug/)).toHaveLength(1);
    expect((await tasks.stats()).completed).toBe(1);
  });

  it('stops calling a listener once unsubscribed, and filters by queue', async () => {
    const { fixed, other, events } = await start(uniquePrefix(), { providers: [] });
    const calls: string[] = [];
    const stop = events.on('messages.pushed', (e) => void calls.push(e.queue), { queue: 'other' });
    await Promise.all([fixed.push('g', { n: 1 }), other.push('g', { n: 1 })]);
    stop();
    await other.push('g', { n: 2 });
    expect(calls).toEqual(['other']);
  });

  it('tells consumer errors while Redis is away', async () => {
    const server = await startRedis();
    try {
      const { seen, record } = await start(uniquePrefix(), { url: server.url, logs: new CapturedLogs() });
      record('consumer.error');
      await server.stop();
      await pollUntil(
        () =>
          seen['consumer.error']?.some((e) => e.queue === 'tasks') &&
          seen['consumer.error']?.some((e) => e.queue === 'events'),
        'claim errors of both queues',
      );
      const [error] = seen['consumer.error']!;
      expect(error).toMatchObject({ operation: 'claim' });
      expect(['Reporter.report', 'Worker.run']).toContain(error.consumer);
      expect(error.error).toBeInstanceOf(Error);
    } finally {
      await server.stop();
    }
  });

  it('refuses an unknown event name, and a listener filtering on a queue that is not registered', async () => {
    const events = new QueueEvents();
    expect(() => events.on('task.exploded' as QueueEventName, () => undefined)).toThrow(QueueConfigError);
    expect(() => events.on('task.exploded' as QueueEventName, () => undefined)).toThrow(
      /"task.exploded" is not a queue event; listen to one of "messages.pushed"/,
    );

    @Injectable()
    class Misdirected {
      @OnQueueEvent('task.dead', { queue: 'taks' })
      onDead() {}
    }
    const failed = start(uniquePrefix(), { providers: [Misdirected], logs: new CapturedLogs() });
    await expect(failed).rejects.toThrow(UnknownQueueError);
    await expect(failed).rejects.toThrow(/No delay queue named "taks" is registered \(registered: "tasks"\)/);
  });
});
