import { Injectable } from '@nestjs/common';
import { OnQueueEvent, type TaskDeadEvent, type TaskFailedEvent } from 'nestjs-redis-queues';
import { recordTasks, useQueueApps } from '@test/support/fixtures';
import { CapturedLogs } from '@test/support/faults';
import { pollUntil } from '@test/support/testing';

const thrown: { value: unknown } = { value: undefined };
const failing = recordTasks('tasks', { concurrency: 2 }, () => {
  throw thrown.value;
});

@Injectable()
class Listener {
  static readonly seen: { event: string; id: string }[] = [];

  @OnQueueEvent('task.failed')
  failed(event: TaskFailedEvent) {
    Listener.seen.push({ event: 'task.failed', id: event.id });
  }

  @OnQueueEvent('task.dead')
  dead(event: TaskDeadEvent) {
    Listener.seen.push({ event: 'task.dead', id: event.id });
  }

  @OnQueueEvent('consumer.error')
  error() {
    Listener.seen.push({ event: 'consumer.error', id: '' });
  }
}

describe('Handlers that throw values String() cannot print', () => {
  const harness = useQueueApps();

  afterEach(() => {
    Listener.seen.length = 0;
  });

  async function start(logs: CapturedLogs) {
    const app = await harness.start({
      root: { idlePollMs: 200 },
      // A 30 s lease: a failure that is not recorded would hold the task that long.
      delay: [
        {
          name: 'tasks',
          shards: 2,
          leaseMs: 30_000,
          maxAttempts: 2,
          backoff: { type: 'fixed', delayMs: 100 },
        },
      ],
      providers: [failing.consumer, Listener],
      logger: logs,
    });
    return app.delay('tasks');
  }

  it.each([
    ['a null-prototype object', () => Object.create(null)],
    [
      'an object whose toString throws',
      () => ({
        toString() {
          throw new Error('no');
        },
      }),
    ],
  ])('records %s as a failure: retried after the backoff, then dead, with events', async (_label, make) => {
    thrown.value = make();
    const logs = new CapturedLogs();
    const tasks = await start(logs);
    await tasks.schedule({}, { id: 'x' });
    // The retry comes after the 100 ms backoff, not after the 30 s lease.
    await failing.untilTasks(2, 5_000);
    expect(failing.tasks[1].at - failing.tasks[0].at).toBeLessThan(5_000);
    const dead = await pollUntil(async () => {
      const task = await tasks.get('x');
      return task?.state === 'dead' ? task : undefined;
    }, 'the task to be dead-lettered');
    expect(dead.lastError).toBe('[object Object]');
    await pollUntil(() => Listener.seen.some((seen) => seen.event === 'task.dead'), 'task.dead');
    expect(Listener.seen).toEqual([
      { event: 'task.failed', id: 'x' },
      { event: 'task.dead', id: 'x' },
    ]);
    expect(logs.find('warn', /task failed, will retry .*error="\[object Object\]"/)).toHaveLength(1);
  });

  it('caps the log line of an error with a 10 MB message', async () => {
    thrown.value = new Error('x'.repeat(10 * 1024 * 1024));
    const logs = new CapturedLogs();
    const tasks = await start(logs);
    await tasks.schedule({}, { id: 'big' });
    const [line] = await pollUntil(() => {
      const found = logs.find('error', /dead-lettered/);
      return found.length > 0 ? found : undefined;
    }, 'the dead-letter log line');
    expect(line.length).toBeLessThan(2_500);
    expect(line).toMatch(/characters in all\)/);
    expect(Math.max(...logs.lines.map((entry) => entry.message.length))).toBeLessThan(2_500);
    expect((await tasks.get('big'))?.lastError?.length).toBeLessThanOrEqual(2_000);
  });
});
