import { Injectable, type INestApplication, Module, Scope } from '@nestjs/common';
import { ScheduleModule, SchedulerRegistry } from '@nestjs/schedule';
import { Test } from '@nestjs/testing';
import {
  BatchConsumer,
  type BatchConsumerOptions,
  type BatchContext,
  DelayConsumer,
  type DelayQueue,
  getDelayQueueToken,
  InjectDelayQueue,
  OnQueueEvent,
  QUEUE_DEFAULTS,
  QueueConfigError,
  QueueModule,
  type FixedQueueOptions,
} from 'nestjs-redis-queues';
import { CapturedLogs } from '@test/support/faults';
import { recordBatches, recordTasks, useQueueApps } from '@test/support/fixtures';
import { createApp, deferred, pollUntil, rawClient, redisUrl, uniquePrefix } from '@test/support/testing';

/** What an application reads from its environment: strings, as ConfigService hands them over from .env. */
const CONFIG = 'CONFIG';
type Config = Record<string, string>;

function configModule(values: Config) {
  @Module({ providers: [{ provide: CONFIG, useValue: values }], exports: [CONFIG] })
  class ConfigModule {}
  return ConfigModule;
}

/** The error an application's start-up failed with. */
async function startupError(start: Promise<unknown>): Promise<Error> {
  try {
    await start;
  } catch (error) {
    return error as Error;
  }
  throw new Error('the application started');
}

describe('Configuration', () => {
  const harness = useQueueApps({ client: rawClient });

  describe('registerFixedQueueAsync / registerDelayQueueAsync', () => {
    it('take a queue’s options from injected configuration, validated like registerFixedQueue’s', async () => {
      const Config = configModule({ capacity: '20', batchSize: '5', maxWaitMs: '30', attempts: '2' });
      const reports = recordBatches<number>('events');
      const { fixed, delay } = await harness.start({
        imports: [
          QueueModule.registerFixedQueueAsync({
            name: 'events',
            imports: [Config],
            inject: [CONFIG],
            useFactory: (config: Config) => ({
              capacity: Number(config.capacity),
              batchSize: Number(config.batchSize),
              maxWaitMs: Number(config.maxWaitMs),
            }),
          }),
          QueueModule.registerDelayQueueAsync({
            name: 'reminders',
            imports: [Config],
            inject: [CONFIG],
            useFactory: async (config: Config) => ({ maxAttempts: Number(config.attempts) }),
          }),
        ],
        providers: [reports.consumer],
      });
      expect(fixed('events').options).toMatchObject({ name: 'events', capacity: 20, batchSize: 5, maxWaitMs: 30 });
      expect(delay('reminders').options.maxAttempts).toBe(2);
      await fixed<number>('events').pushMany('g', [1, 2, 3, 4, 5, 6, 7]);
      await reports.untilMessages(7);
      expect(reports.batches.map((batch) => batch.messages)).toEqual([
        [1, 2, 3, 4, 5],
        [6, 7],
      ]);
    });

    it('refuse what the factory made as registerFixedQueue would, with the value received', async () => {
      const Config = configModule({ batchSize: '50' });
      const error = await startupError(
        harness.start({
          imports: [
            QueueModule.registerFixedQueueAsync({
              name: 'events',
              imports: [Config],
              inject: [CONFIG],
              useFactory: (config: Config) => ({ batchSize: config.batchSize as unknown as number, maxWait: 5 }),
            }),
          ],
        }),
      );
      expect(error).toBeInstanceOf(QueueConfigError);
      expect(error.message).toBe(
        'Invalid options for fixed queue "events": maxWait is not an option (did you mean maxWaitMs?); ' +
          'batchSize must be an integer between 1 and 10000 (got "50", a string)',
      );
    });

    it('need the name beside the factory, and a factory that returns another name is refused', async () => {
      expect(() => QueueModule.registerDelayQueueAsync({ useFactory: () => ({}) } as never)).toThrow(
        /registerDelayQueueAsync needs a name .* the queue's injection token is made from it/,
      );
      const error = await startupError(
        harness.start({
          imports: [QueueModule.registerFixedQueueAsync({ name: 'events', useFactory: () => ({ name: 'other' }) })],
        }),
      );
      expect(error).toBeInstanceOf(QueueConfigError);
      expect(error.message).toMatch(/useFactory of queue "events" returned name "other"/);
    });
  });

  describe('consumer options from configuration', () => {
    it('time a scheduled consumer and size a delay consumer from injected providers', async () => {
      const Config = configModule({ digestEveryMs: '200', digestName: 'digest', reminderConcurrency: '2' });
      const digest = recordBatches<number>('events', {
        inject: [CONFIG],
        useFactory: (config: Config) => ({ intervalMs: Number(config.digestEveryMs), name: config.digestName }),
      });
      const release = deferred();
      const reminders = recordTasks(
        'reminders',
        {
          inject: [CONFIG],
          useFactory: async (config: Config) => ({ concurrency: Number(config.reminderConcurrency) }),
        },
        () => release.promise,
      );
      const { app, fixed, delay } = await harness.start({
        fixed: [{ name: 'events', maxWaitMs: 0 }],
        delay: [{ name: 'reminders' }],
        imports: [Config, ScheduleModule.forRoot()],
        providers: [digest.consumer, reminders.consumer],
      });
      const intervals = app.get(SchedulerRegistry).getIntervals();
      expect(intervals).toContain('digest');
      await fixed<number>('events').push('g', 1);
      await digest.untilMessages(1);

      // Two tasks handled at once: the concurrency of 2 came from the configuration (the default is 1).
      await delay('reminders').schedule({}, { id: 'a' });
      await delay('reminders').schedule({}, { id: 'b' });
      await reminders.untilTasks(2);
      expect(reminders.ids().sort()).toEqual(['a', 'b']);
      release.resolve();
    });

    it('fail start-up with a QueueConfigError naming the consumer: a bad cron, a provider nobody provides', async () => {
      @Injectable()
      class Reporter {
        @BatchConsumer('events', { inject: [CONFIG], useFactory: (config: Config) => ({ cron: config.cron }) })
        digest() {}
      }
      const cron = await startupError(
        harness.start({
          fixed: [{ name: 'events' }],
          imports: [configModule({ cron: 'eve' }), ScheduleModule.forRoot()],
          providers: [Reporter],
        }),
      );
      expect(cron).toBeInstanceOf(QueueConfigError);
      expect(cron.message).toMatch(/^@BatchConsumer on Reporter\.digest: cron "eve" is not a cron expression \(/);

      const missing = await startupError(
        harness.start({ fixed: [{ name: 'events' }], imports: [ScheduleModule.forRoot()], providers: [Reporter] }),
      );
      expect(missing).toBeInstanceOf(QueueConfigError);
      expect(missing.message).toBe(
        '@BatchConsumer on Reporter.digest: inject lists CONFIG, which no module of the application provides',
      );
    });

    it('refuse a cron written in the decorator that does not parse, naming the consumer', async () => {
      @Injectable()
      class Reporter {
        @BatchConsumer('events', { cron: '61 * * * * *' })
        digest() {}
      }
      const error = await startupError(
        harness.start({ fixed: [{ name: 'events' }], imports: [ScheduleModule.forRoot()], providers: [Reporter] }),
      );
      expect(error).toBeInstanceOf(QueueConfigError);
      expect(error.message).toMatch(/^@BatchConsumer on Reporter\.digest: cron "61 \* \* \* \* \*" is not a cron/);
    });
  });

  describe('start-up errors', () => {
    it('say that a name is registered as a fixed and as a delay queue', async () => {
      const error = await startupError(harness.start({ fixed: [{ name: 'jobs' }], delay: [{ name: 'jobs' }] }));
      expect(error).toBeInstanceOf(QueueConfigError);
      expect(error.message).toMatch(/^"jobs" is registered as a fixed queue and as a delay queue/);
    });

    it('say that the batchSize capacity was checked against is the default', async () => {
      const error = await startupError(harness.start({ fixed: [{ name: 'events', capacity: 100 }] }));
      expect(error.message).toBe(
        'Invalid options for fixed queue "events": capacity must be ≥ batchSize (got capacity=100, batchSize=128 by default)',
      );
    });

    it('refuse consumers on a request-scoped provider', async () => {
      @Injectable({ scope: Scope.REQUEST })
      class PerRequest {
        @DelayConsumer('reminders')
        remind() {}
      }
      const error = await startupError(harness.start({ delay: [{ name: 'reminders' }], providers: [PerRequest] }));
      expect(error).toBeInstanceOf(QueueConfigError);
      expect(error.message).toMatch(/^@DelayConsumer on PerRequest\.remind: a request-scoped provider/);
    });
  });

  describe("a DelayQueue's lease under its former name, visibilityTimeoutMs", () => {
    it('is the lease all the same, with one warning that names the queue and leaseMs', async () => {
      const logs = new CapturedLogs();
      const release = deferred();
      const reminders = recordTasks('reminders', {}, () => release.promise);
      try {
        const { delay } = await harness.start({
          logger: logs,
          delay: [{ name: 'reminders', visibilityTimeoutMs: 1000 }],
          providers: [reminders.consumer],
        });
        const queue = delay('reminders');
        expect(queue.options.leaseMs).toBe(1000);
        expect(queue.options).not.toHaveProperty('visibilityTimeoutMs');
        expect(logs.find('warn', /visibilityTimeoutMs/)).toEqual([
          'delay queue "reminders": visibilityTimeoutMs is deprecated, use leaseMs, the lease\'s name on both queues ' +
            '(it is read as leaseMs meanwhile)',
        ]);

        // The task is held for 1 s at a time (its handler's heartbeat renews it), not the default 30 s.
        await queue.schedule({}, { id: 'a' });
        await reminders.untilTasks(1);
        const [task] = (await queue.list('active')).items;
        const held = task.leaseEndsAt! - reminders.tasks[0].ctx.firedAt;
        expect(held).toBeGreaterThanOrEqual(1000);
        expect(held).toBeLessThan(QUEUE_DEFAULTS.delayQueue.leaseMs);
      } finally {
        release.resolve();
      }
    });

    it('is refused beside a leaseMs of another value, naming both', async () => {
      const error = await startupError(
        harness.start({ delay: [{ name: 'reminders', leaseMs: 2000, visibilityTimeoutMs: 1000 }] }),
      );
      expect(error).toBeInstanceOf(QueueConfigError);
      expect(error.message).toBe(
        'Invalid options for delay queue "reminders": leaseMs and visibilityTimeoutMs are two names of the lease, ' +
          'given different values (got leaseMs=2000, visibilityTimeoutMs=1000): give leaseMs alone',
      );
    });
  });

  describe('the retry words, maxAttempts and backoff, and their former names', () => {
    /** The batches of "events", whose first attempt fails, and the warnings logged at start-up. */
    async function failingOnce(queue: Partial<FixedQueueOptions>, consumer: BatchConsumerOptions = {}) {
      const logs = new CapturedLogs();
      const reports = recordBatches<number>('events', consumer, (_messages, ctx: BatchContext) => {
        if (ctx.attempt === 1) throw new Error('first attempt fails');
      });
      const { fixed } = await harness.start({
        logger: logs,
        fixed: [{ name: 'events', shards: 1, maxWaitMs: 0, ...queue }],
        providers: [reports.consumer],
      });
      await fixed<number>('events').push('g', 1);
      await reports.untilMessages(2);
      const attempts = reports.batches.map((batch) => batch.ctx.attempt);
      return { attempts, warnings: logs.find('warn', /deprecated/), options: fixed('events').options };
    }

    const atLeastOnce = { delivery: 'at-least-once', maxAttempts: 2 } as const;

    it('FixedQueue at least once: backoff and maxAttempts retry a failed batch, with nothing to warn of', async () => {
      const run = await failingOnce({ ...atLeastOnce, backoff: { type: 'fixed', delayMs: 20 } });
      expect(run.attempts).toEqual([1, 2]);
      expect(run.options.backoff).toEqual({ type: 'fixed', delayMs: 20, maxDelayMs: 3_600_000 });
      expect(run.warnings).toEqual([]);
    });

    it('FixedQueue at least once: retryDelayMs is read as backoff, with one warning naming the queue', async () => {
      const run = await failingOnce({ ...atLeastOnce, retryDelayMs: 20 });
      expect(run.attempts).toEqual([1, 2]);
      expect(run.options.backoff).toEqual({ type: 'exponential', delayMs: 20, maxDelayMs: 3_600_000 });
      expect(run.options).not.toHaveProperty('retryDelayMs');
      expect(run.warnings).toEqual([
        'fixed queue "events": retryDelayMs is deprecated, use backoff: ' +
          "{ type: 'exponential', delayMs: 20, maxDelayMs: 3600000 }, the retry's words everywhere " +
          '(it is read as backoff meanwhile)',
      ]);
    });

    it('@BatchConsumer at most once: maxAttempts and backoff retry in process, with nothing to warn of', async () => {
      const run = await failingOnce({}, { maxAttempts: 2, backoff: { type: 'fixed', delayMs: 10 } });
      expect(run.attempts).toEqual([1, 2]);
      expect(run.warnings).toEqual([]);
    });

    it('@BatchConsumer at most once: retries and retryDelayMs are read as them, with one warning each', async () => {
      const run = await failingOnce({}, { retries: 1, retryDelayMs: 10 });
      expect(run.attempts).toEqual([1, 2]);
      expect(run.warnings).toEqual([
        expect.stringMatching(/^@BatchConsumer on .*: retries is deprecated, use maxAttempts: 2, /),
        expect.stringMatching(/^@BatchConsumer on .*: retryDelayMs is deprecated, use backoff: /),
      ]);
    });

    it('refuse a bad value under either name at start-up, naming the key', async () => {
      const refused = async (queue: Partial<FixedQueueOptions>, consumer: BatchConsumerOptions = {}) => {
        const reports = recordBatches<number>('events', consumer);
        const error = await startupError(
          harness.start({ fixed: [{ name: 'events', ...queue }], providers: [reports.consumer] }),
        );
        expect(error).toBeInstanceOf(QueueConfigError);
        return error.message;
      };
      expect(await refused({ retryDelayMs: -1 })).toBe(
        'Invalid options for fixed queue "events": retryDelayMs must be an integer between 0 and 86400000 (got -1)',
      );
      expect(await refused({ backoff: { type: 'fixed', delayMs: -1 } })).toBe(
        'Invalid options for fixed queue "events": backoff.delayMs must be an integer between 0 and 2147483647 (got -1)',
      );
      expect(await refused({}, { retries: -1 })).toMatch(
        /^Invalid options for @BatchConsumer on .*: retries must be an integer between 0 and 999 \(got -1\)$/,
      );
      expect(await refused({}, { maxAttempts: 0 })).toMatch(
        /^Invalid options for @BatchConsumer on .*: maxAttempts must be an integer between 1 and 1000 \(got 0\)$/,
      );
      expect(await refused(atLeastOnce, { retries: 1 })).toMatch(/maxAttempts \(formerly retries\) above 1 applies/);
    });
  });

  describe('queue tokens overridden in a test', () => {
    @Injectable()
    class Reminders {
      constructor(@InjectDelayQueue('reminders') readonly queue: DelayQueue) {}

      @DelayConsumer('reminders')
      remind() {}

      @OnQueueEvent('task.dead', { queue: 'reminders' })
      onDead() {}
    }

    async function withFake(consumers: boolean): Promise<INestApplication> {
      const moduleRef = await Test.createTestingModule({
        imports: [
          QueueModule.forRoot({ connection: redisUrl(), prefix: harness.prefix(), consumers }),
          QueueModule.registerDelayQueue({ name: 'reminders' }),
        ],
        providers: [Reminders],
      })
        .overrideProvider(getDelayQueueToken('reminders'))
        .useValue({ schedule: async () => ({ id: 'x', runAt: 0 }) })
        .compile();
      return harness.track(await moduleRef.createNestApplication({ logger: ['error'] }).init());
    }

    it('start with consumers and listeners of the replaced queue, which get the fake', async () => {
      for (const consumers of [false, true]) {
        const app = await withFake(consumers);
        expect(await app.get(Reminders).queue.schedule({}, { id: 'x' })).toEqual({ id: 'x', runAt: 0 });
      }
    });
  });

  describe('a start-up that fails', () => {
    /** The connections of the application named `name` on the test server. */
    async function connectionsNamed(name: string): Promise<string[]> {
      const list = (await harness.redis.client('LIST')) as string;
      return list.split('\n').filter((line) => line.includes(` name=${name} `));
    }

    async function failToStart(name: string, metadata: Parameters<typeof createApp>[0]): Promise<Error> {
      const { port, hostname } = new URL(redisUrl());
      const moduleRef = await Test.createTestingModule({
        ...metadata,
        imports: [
          QueueModule.forRoot({
            connection: { host: hostname, port: Number(port), connectionName: name },
            prefix: harness.prefix(),
          }),
          ...(metadata.imports ?? []),
        ],
      }).compile();
      // No app.close() after the failure, as a test whose init() rejected or a bootstrap that exits leaves it.
      return startupError(moduleRef.createNestApplication({ logger: false }).init());
    }

    it('closes its connections whichever check failed', async () => {
      @Injectable()
      class Listener {
        @OnQueueEvent('task.dead', { queue: 'nope' })
        onDead() {}
      }
      @Injectable()
      class Consumer {
        @DelayConsumer('reminders')
        remind() {}
        @BatchConsumer('events', { cron: 'eve' })
        digest() {}
      }
      const prefix = uniquePrefix('shards');
      const first = await harness.start({ prefix, delay: [{ name: 'reminders', shards: 2 }] });
      await harness.close(first.app);

      const failures: [string, Parameters<typeof createApp>[0], RegExp][] = [
        ['listener', { providers: [Listener] }, /No delay queue named "nope"/],
        [
          'consumer',
          {
            imports: [
              ScheduleModule.forRoot(),
              QueueModule.registerDelayQueue({ name: 'reminders' }),
              QueueModule.registerFixedQueue({ name: 'events' }),
            ],
            providers: [Consumer],
          },
          /cron "eve"/,
        ],
      ];
      for (const [label, metadata, reason] of failures) {
        const name = `failing-${label}-${uniquePrefix()}`;
        expect((await failToStart(name, metadata)).message).toMatch(reason);
        await pollUntil(async () => (await connectionsNamed(name)).length === 0, `${label}: connections closed`, 5000);
      }

      // The stored shard count differs: found once Redis answered, then the connection closes.
      const name = `failing-meta-${uniquePrefix()}`;
      const { port, hostname } = new URL(redisUrl());
      const moduleRef = await Test.createTestingModule({
        imports: [
          QueueModule.forRoot({ connection: { host: hostname, port: Number(port), connectionName: name }, prefix }),
          QueueModule.registerDelayQueue({ name: 'reminders', shards: 4 }),
        ],
      }).compile();
      const meta = await startupError(moduleRef.createNestApplication({ logger: false }).init());
      expect(meta.message).toMatch(/was created with 2 shards but is configured with 4/);
      await pollUntil(async () => (await connectionsNamed(name)).length === 0, 'meta: connections closed', 5000);
    });
  });
});
