import IORedis from 'ioredis';
import { QueueConnectionError, QueueInputError } from 'nestjs-redis-queues';
import { recordTasks, useQueueApps } from '@test/support/fixtures';
import { freePort, startRedis, timed, type RedisServer } from '@test/support/faults';
import { pollUntil } from '@test/support/testing';

/**
 * A write made after the application's database committed must reach Redis, or say why it did not:
 * writes retry within `retryMs` when Redis was unreachable or silent, each applied once, and a write
 * whose reply was lost still wakes the consumers once Redis answers again.
 */
describe('writes after a commit', () => {
  const harness = useQueueApps();
  const servers: RedisServer[] = [];

  afterEach(async () => {
    for (const server of servers) {
      try {
        process.kill(server.pid, 'SIGCONT');
      } catch {
        // Stopped already.
      }
    }
    await Promise.all(servers.splice(0).map((server) => server.stop()));
  });

  async function server(port?: number): Promise<RedisServer> {
    const started = await startRedis(port === undefined ? {} : { port });
    servers.push(started);
    return started;
  }

  async function queues(url: string, options: { retryMs?: number; consumers?: boolean } = {}) {
    const { retryMs, consumers = false } = options;
    return harness.start({
      connection: url,
      root: { consumers, startup: 'continue', commandTimeoutMs: 500 },
      fixed: [{ name: 'events', shards: 1 }],
      delay: [{ name: 'tasks', shards: 1, ...(retryMs !== undefined && { retryMs }) }],
    });
  }

  describe('retryMs', () => {
    it('takes a schedule with an id once Redis, unreachable when it was called, comes back within it', async () => {
      const port = await freePort();
      const app = await queues(`redis://127.0.0.1:${port}`);
      const tasks = app.delay('tasks');
      const call = timed(tasks.schedule({ meal: 1 }, { id: 'feed:rex', delayMs: 60_000, retryMs: 10_000 }));
      await new Promise((resolve) => setTimeout(resolve, 1000));
      const upAt = Date.now();
      await server(port);
      const { value, error, ms } = await call;
      expect(error).toBeUndefined();
      expect(value).toMatchObject({ id: 'feed:rex', changed: true });
      expect(await tasks.get('feed:rex')).toMatchObject({ state: 'scheduled', payload: { meal: 1 } });
      process.stdout.write(
        `retryMs, Redis down 1 s: schedule resolved after ${ms} ms, ${Date.now() - upAt} ms after Redis was back\n`,
      );
    });

    it('takes reschedule and cancel after Redis was frozen (outcome unknown), once each', async () => {
      const redis = await server();
      const app = await queues(redis.url);
      const tasks = app.delay('tasks');
      await tasks.schedule({}, { id: 'a', delayMs: 60_000 });
      await tasks.schedule({}, { id: 'b', delayMs: 60_000 });
      const runAt = Date.now() + 120_000;
      process.kill(redis.pid, 'SIGSTOP');
      const moved = timed(tasks.reschedule('a', { runAt, retryMs: 10_000 }));
      const cancelled = timed(tasks.cancel('b', { retryMs: 10_000 }));
      // Each call's first try times out (commandTimeoutMs 500): its outcome is unknown.
      await new Promise((resolve) => setTimeout(resolve, 1500));
      process.kill(redis.pid, 'SIGCONT');
      const [move, cancel] = await Promise.all([moved, cancelled]);
      expect(move.error).toBeUndefined();
      expect(move.value).toEqual({ id: 'a', runAt });
      // The try Redis answered may come after one it ran without a reply: false is "gone by then".
      expect(cancel.error).toBeUndefined();
      expect(await tasks.get('a')).toMatchObject({ runAt });
      expect(await tasks.get('b')).toBeNull();
      process.stdout.write(`retryMs, Redis frozen 1.5 s: reschedule ${move.ms} ms, cancel ${cancel.ms} ms\n`);
    });

    it('gives up after retryMs with the outcome and the number of tries', async () => {
      const port = await freePort();
      const app = await queues(`redis://127.0.0.1:${port}`, { retryMs: 1500 });
      const { error, ms } = await timed(app.delay('tasks').cancel('gone'));
      expect(error).toBeInstanceOf(QueueConnectionError);
      const failure = error as QueueConnectionError;
      expect(failure.outcome).toBe('not-sent');
      expect(failure.tries).toBeGreaterThan(2);
      expect(failure.message).toMatch(
        new RegExp(
          `^cancel\\(id, options\\): tried ${failure.tries} times over \\d+ ms \\(retryMs: 1500\\), Redis answered none; none was sent, so nothing was applied\\. The last try: Redis could not be reached`,
        ),
      );
      expect(ms).toBeGreaterThanOrEqual(1500);
      expect(ms).toBeLessThan(1500 + 2000);
      process.stdout.write(`retryMs 1500, Redis away: rejected after ${ms} ms, ${failure.tries} tries\n`);
    });

    it('is unknown at the end when a try may have reached Redis', async () => {
      const redis = await server();
      const app = await queues(redis.url);
      await app.delay('tasks').schedule({}, { id: 'x' });
      process.kill(redis.pid, 'SIGSTOP');
      const { error } = await timed(app.delay('tasks').schedule({}, { id: 'x', retryMs: 800 }));
      expect(error).toBeInstanceOf(QueueConnectionError);
      expect((error as QueueConnectionError).outcome).toBe('unknown');
      expect((error as QueueConnectionError).tries).toBeGreaterThanOrEqual(2);
      expect((error as Error).message).toMatch(/may or may not have been applied/);
    });

    it("applies the queue's retryMs to every write, a schedule without id too; a call's own 0 tries once", async () => {
      const port = await freePort();
      const app = await queues(`redis://127.0.0.1:${port}`, { retryMs: 300 });
      const { error } = await timed(app.delay('tasks').schedule({}));
      expect((error as QueueConnectionError).tries).toBeGreaterThan(1);
      const own = await timed(app.delay('tasks').cancel('t', { retryMs: 0 }));
      expect((own.error as QueueConnectionError).tries).toBe(1);
    });

    it('refuses a bad retryMs or idempotencyKey on every write with a QueueInputError; nothing is written', async () => {
      const redis = await server();
      const app = await queues(redis.url);
      const tasks = app.delay('tasks');
      const events = app.fixed('events');
      await tasks.schedule({}, { id: 't', delayMs: 60_000 });
      const before = await tasks.get('t');
      const bad = [
        { retryMs: -1 },
        { retryMs: 1.5 },
        { retryMs: 600_001 },
        { idempotencyKey: '' },
        { idempotencyKey: 7 },
      ];
      const refusals = await Promise.all(
        bad.flatMap((options) => [
          timed(tasks.shift('t', 1000, options as never)),
          timed(tasks.reschedule('t', { delayMs: 1000, ...(options as object) })),
          timed(tasks.cancel('t', options as never)),
          timed(tasks.schedule({}, { delayMs: 1000, ...(options as object) })),
          timed(tasks.schedule({}, { id: 't', ...(options as object) })),
          timed(events.push('g', 'm', options as never)),
          timed(events.pushMany('g', ['m'], options as never)),
        ]),
      );
      for (const { error } of refusals) {
        expect(error).toBeInstanceOf(QueueInputError);
        expect((error as Error).message).toMatch(/retryMs|idempotencyKey/);
      }
      expect(await tasks.get('t')).toEqual(before);
      expect(await events.size('g')).toBe(0);
      expect((await tasks.stats()).scheduledTotal).toBe(1);
      const raw = new IORedis(redis.url);
      try {
        expect(await raw.keys('*:call:*')).toEqual([]);
      } finally {
        raw.disconnect();
      }
    });

    it('is validated like every option: a misspelt key is named with the nearest known one', async () => {
      const redis = await server();
      const tasks = (await queues(redis.url)).delay('tasks');
      const misspelt = await timed(tasks.cancel('t', { retyMs: 1000 } as never));
      expect(misspelt.error).toBeInstanceOf(QueueInputError);
      expect((misspelt.error as Error).message).toMatch(/retyMs.*retryMs/);
      const negative = await timed(tasks.reschedule('t', { delayMs: 0, retryMs: -1 }));
      expect((negative.error as Error).message).toMatch(/retryMs/);
      const tooLong = await timed(tasks.schedule({}, { id: 't', retryMs: 3_600_000 }));
      expect((tooLong.error as Error).message).toMatch(/retryMs/);
    });
  });

  describe('a write whose reply was lost', () => {
    const fed = recordTasks<{ meal: number }>('tasks');

    it('wakes the consumers once Redis answers again, not at their next idle poll', async () => {
      const redis = await server();
      // Consumers with the default idlePollMs (60 s): asleep between polls unless a hint wakes them.
      const app = await harness.start({
        connection: redis.url,
        root: { startup: 'fail', commandTimeoutMs: 500 },
        delay: [{ name: 'tasks', shards: 1 }],
        providers: [fed.consumer],
      });
      const tasks = app.delay<{ meal: number }>('tasks');
      await tasks.schedule({ meal: 0 }, { id: 'warm-up' });
      await fed.untilTasks(1);
      await pollUntil(async () => (await tasks.stats()).completed === 1, 'the first task to be acknowledged');
      process.kill(redis.pid, 'SIGSTOP');
      const { error } = await timed(tasks.schedule({ meal: 1 }, { id: 'feed:rex' }));
      expect((error as QueueConnectionError).outcome).toBe('unknown');
      const resumedAt = Date.now();
      process.kill(redis.pid, 'SIGCONT');
      // Applied on resume; without a hint, the consumer would find it at its next idle poll (60 s).
      await fed.untilTasks(2, 10_000);
      const wakeMs = fed.tasks[1].at - resumedAt;
      expect(fed.tasks[1].id).toBe('feed:rex');
      expect(wakeMs).toBeLessThan(5000);
      process.stdout.write(`unknown-outcome schedule handled ${wakeMs} ms after Redis resumed\n`);
      await pollUntil(async () => (await tasks.stats()).completed === 2, 'both tasks to be acknowledged');
    });
  });
});
