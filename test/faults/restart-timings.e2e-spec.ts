import { Injectable } from '@nestjs/common';
import {
  QueueEvents,
  QueueHealthIndicator,
  Recurring,
  TaskSource,
  type QueueDataLostEvent,
  type SourcedTask,
} from 'nestjs-redis-queues';
import { CapturedLogs, startRedis, type RedisServer } from '@test/support/faults';
import { useQueueApps } from '@test/support/fixtures';
import { pollUntil } from '@test/support/testing';

const RESTARTS = 10;
const QUEUES = ['games', 'events', 'pets', 'reminders'];
/** Rounds of what a process declares come every 3 s, its queue records' checks every 15 s. */
const ROUND_MS = 3_000;
/** Found at once: a reconnection's own check, not the next periodic one 15 s later. */
const AT_ONCE_MS = 5_000;

@Injectable()
class Pets {
  @TaskSource('pets')
  *meals(): Iterable<SourcedTask<{ grams: number }>> {
    for (let i = 0; i < 20; i++) yield { id: `meal:${i}`, delayMs: 3_600_000 + i, payload: { grams: i } };
  }

  @Recurring({ everyMs: 1_000, name: 'digest' })
  digest() {}
}

function figures(values: number[]): string {
  const sorted = [...values].sort((a, b) => a - b);
  const median = (sorted[(sorted.length - 1) >> 1] + sorted[sorted.length >> 1]) / 2;
  return `min ${sorted[0]} ms, median ${median} ms, max ${sorted.at(-1)} ms`;
}

/**
 * Redis killed and restarted empty at random points of the rounds (a FixedQueue at-least-once, one
 * at-most-once, a DelayQueue rebuilt by its task source, one without, two `@Recurring` schedules): from
 * the moment the new server answers, how long until readiness is up and until each queue's loss is found.
 */
describe('Restarts without persistence at random points of the check rounds', () => {
  const harness = useQueueApps();
  let server: RedisServer | undefined;

  afterEach(async () => {
    await server?.stop();
  });
  it(`finds every loss and is ready again within seconds, ${RESTARTS} times`, async () => {
    server = await startRedis();
    const { app } = await harness.start({
      connection: server.url,
      root: { idlePollMs: 60_000, commandTimeoutMs: 1_000 },
      fixed: [{ name: 'games', shards: 4, delivery: 'at-least-once' }, { name: 'events' }],
      delay: [{ name: 'pets', shards: 4, reconcile: { everyMs: 300_000 } }, { name: 'reminders' }],
      providers: [Pets],
      // The outages are logged on purpose.
      logger: new CapturedLogs(),
    });
    const health = app.get(QueueHealthIndicator);
    const lost: (QueueDataLostEvent & { at: number })[] = [];
    app.get(QueueEvents).on('queue.data-lost', (event) => lost.push({ ...event, at: Date.now() }));
    const ready: number[] = [];
    const found: number[] = [];
    const late: string[] = [];

    for (let restart = 1; restart <= RESTARTS; restart++) {
      // Not a synchronisation: where in the rounds the restart lands is what varies from one to the next.
      await new Promise((resolve) => setTimeout(resolve, Math.random() * ROUND_MS));
      const { port } = server;
      await server.kill('SIGKILL');
      await new Promise((resolve) => setTimeout(resolve, Math.random() * 1_000));
      const before = lost.length;
      server = await startRedis({ port });
      const answering = Date.now();
      const upAt = await pollUntil(
        async () => ((await health.isHealthy('q', { timeoutMs: 500 })).q.status === 'up' ? Date.now() : undefined),
        'readiness up again',
        20_000,
        5,
      );
      ready.push(upAt - answering);
      await pollUntil(() => lost.length - before === QUEUES.length, 'every loss found', 20_000);
      for (const { queue, at } of lost.slice(before)) {
        found.push(at - answering);
        if (at - answering > AT_ONCE_MS) late.push(`restart ${restart}: ${queue} after ${at - answering} ms`);
      }
    }

    process.stdout.write(
      `${RESTARTS} restarts without persistence, from Redis answering: readiness up ${figures(ready)}; ` +
        `each of ${QUEUES.length} queues' loss found ${figures(found)}\n`,
    );
    expect(late).toEqual([]);
    expect(Math.max(...ready)).toBeLessThan(AT_ONCE_MS);
  }, 240_000);
});
