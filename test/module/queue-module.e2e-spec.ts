import { Controller, Injectable, type INestApplication, Module } from '@nestjs/common';
import { ScheduleModule, SchedulerRegistry } from '@nestjs/schedule';
import IORedis from 'ioredis';
import {
  BatchConsumer,
  type BatchContext,
  DelayConsumer,
  type DelayContext,
  DelayQueue,
  FixedQueue,
  InjectDelayQueue,
  InjectFixedQueue,
  QueueConfigError,
  QueueModule,
  UnknownQueueError,
} from 'nestjs-redis-queues';
import { startRedis } from '@test/support/faults';
import { useQueueApps } from '@test/support/fixtures';
import { expectErrors, expectedErrors } from '@test/support/logs';
import { createApp, deferred, pollUntil, rawClient, redisUrl, uniquePrefix } from '@test/support/testing';

const fixed = (name = 'events') =>
  QueueModule.registerFixedQueue({ name, shards: 2, batchSize: 4, capacity: 100, maxWaitMs: 20 });
const delay = (name = 'tasks') => QueueModule.registerDelayQueue({ name, shards: 2 });

describe('QueueModule', () => {
  const seen: string[] = [];
  const harness = useQueueApps({ client: rawClient });
  afterEach(() => {
    seen.length = 0;
  });

  async function boot(...args: Parameters<typeof createApp>) {
    return harness.track(await createApp(...args));
  }

  it('configures itself through forRootAsync with injected dependencies', async () => {
    const prefix = uniquePrefix();
    @Module({
      providers: [{ provide: 'REDIS_SETTINGS', useValue: { url: redisUrl(), prefix } }],
      exports: ['REDIS_SETTINGS'],
    })
    class SettingsModule {}
    @Injectable()
    class Producer {
      constructor(@InjectFixedQueue('events') readonly events: FixedQueue<{ n: number }>) {}
    }
    const app = await boot({
      imports: [
        QueueModule.forRootAsync({
          imports: [SettingsModule],
          inject: ['REDIS_SETTINGS'],
          useFactory: (settings: { url: string; prefix: string }) => ({
            connection: settings.url,
            prefix: settings.prefix,
          }),
        }),
        fixed(),
      ],
      providers: [Producer],
    });
    await app.get(Producer).events.push('g1', { n: 1 });
    const keys = await harness.redis.keys(`${prefix}:*`);
    // Every key of a shard carries the shard's hash tag, behind the prefix.
    expect(keys.sort()).toEqual(
      expect.arrayContaining([
        `${prefix}:{events}:meta`,
        expect.stringMatching(new RegExp(`^${prefix}:\\{events:[01]\\}:g:g1$`)),
      ]),
    );
    // Besides the hash where the processes of the prefix announce themselves (QueueProcesses).
    const queueKeys = keys.filter((key) => key !== `${prefix}:{processes}:announced`);
    expect(queueKeys).toHaveLength(keys.length - 1);
    for (const key of queueKeys) expect(key).toMatch(new RegExp(`^${prefix}:\\{events(:\\d+)?\\}:`));
  });

  it('uses an existing client and never closes it', async () => {
    const client = new IORedis(redisUrl());
    const app = await createApp({
      imports: [QueueModule.forRoot({ connection: client, prefix: uniquePrefix() }), delay()],
    });
    const tasks = app.get<DelayQueue>('nrq:delay_queue:tasks');
    await tasks.schedule({ a: 1 }, { id: 'x', delayMs: 60_000 });
    await app.close();
    expect(client.status).toBe('ready');
    expect(await client.ping()).toBe('PONG');
    await client.quit();
  });

  it('discovers consumers on class, value and factory providers and on controllers', async () => {
    class ValueConsumer {
      @BatchConsumer('events')
      fromValue(messages: { n: number }[], ctx: BatchContext) {
        seen.push(`value:${ctx.group}:${messages.length}`);
      }
    }
    class FactoryConsumer {
      @DelayConsumer('tasks')
      fromFactory(_task: unknown, ctx: DelayContext) {
        seen.push(`factory:${ctx.id}`);
      }
    }
    @Controller()
    class TaskController {
      @DelayConsumer('other-tasks')
      fromController(_task: unknown, ctx: DelayContext) {
        seen.push(`controller:${ctx.id}`);
      }
    }
    @Injectable()
    class Producer {
      constructor(
        @InjectFixedQueue('events') readonly events: FixedQueue<{ n: number }>,
        @InjectDelayQueue('tasks') readonly tasks: DelayQueue,
        @InjectDelayQueue('other-tasks') readonly other: DelayQueue,
      ) {}
    }
    const app = await boot({
      imports: [
        QueueModule.forRoot({ connection: redisUrl(), prefix: uniquePrefix() }),
        fixed(),
        delay(),
        delay('other-tasks'),
      ],
      providers: [
        Producer,
        { provide: 'value', useValue: new ValueConsumer() },
        { provide: 'factory', useFactory: () => new FactoryConsumer() },
      ],
      controllers: [TaskController],
    });
    const producer = app.get(Producer);
    await producer.events.pushMany('g', [{ n: 1 }, { n: 2 }, { n: 3 }, { n: 4 }]);
    await producer.tasks.schedule({}, { id: 't1' });
    await producer.other.schedule({}, { id: 't2' });
    await pollUntil(() => seen.length === 3, 'three consumers');
    expect(seen.sort()).toEqual(['controller:t2', 'factory:t1', 'value:g:4']);
  });

  it('runs a scheduled consumer through SchedulerRegistry, draining every due group per run', async () => {
    let runs = 0;
    @Injectable()
    class Digest {
      @BatchConsumer('events', { intervalMs: 300, name: 'events-digest', concurrency: 2 })
      digest(messages: { n: number }[], ctx: BatchContext) {
        seen.push(`${ctx.group}:${messages.length}`);
      }
    }
    @Injectable()
    class CronDigest {
      @BatchConsumer('cron-events', { cron: '*/1 * * * * *' })
      digest(messages: unknown[]) {
        runs += messages.length;
      }
    }
    const app = await boot({
      // ScheduleModule after the queues: its own shutdown then clears the registry before ours runs.
      imports: [
        QueueModule.forRoot({ connection: redisUrl(), prefix: uniquePrefix() }),
        fixed(),
        fixed('cron-events'),
        ScheduleModule.forRoot(),
      ],
      providers: [Digest, CronDigest],
    });
    const registry = app.get(SchedulerRegistry);
    expect(registry.getIntervals()).toContain('events-digest');
    expect(registry.getCronJobs().has('nrq:cron-events:CronDigest.digest')).toBe(true);

    const events = app.get<FixedQueue<{ n: number }>>('nrq:fixed_queue:events');
    await Promise.all(
      Array.from({ length: 10 }, (_, g) =>
        events.pushMany(
          `g${g}`,
          Array.from({ length: 9 }, (__, n) => ({ n })),
        ),
      ),
    );
    // 10 groups × 9 messages, batches of 4: every message arrives through scheduled drains only.
    await pollUntil(() => seen.reduce((sum, s) => sum + Number(s.split(':')[1]), 0) === 90, 'the drained groups', 5000);
    expect(seen.every((s) => Number(s.split(':')[1]) <= 4)).toBe(true);
    await app.get<FixedQueue>('nrq:fixed_queue:cron-events').pushMany('c', [1, 2, 3]);
    await pollUntil(() => runs === 3, 'the cron drain', 5000);
    await harness.close(app);
    expect(registry.getIntervals()).not.toContain('events-digest');
  });

  it('retries a failing batch in process, then hands it to onFailed and keeps consuming', async () => {
    expectErrors(/batch failed after its last attempt group="bad"/);
    const failures: string[] = [];
    @Injectable()
    class Flaky {
      @BatchConsumer('events', { maxAttempts: 3, backoff: { type: 'exponential', delayMs: 10 }, onFailed: 'failed' })
      handle(messages: { n: number }[], ctx: BatchContext) {
        seen.push(`${ctx.group}#${ctx.attempt}`);
        if (ctx.group === 'bad') throw new Error('upstream down');
      }
      failed(error: Error, messages: { n: number }[], ctx: BatchContext) {
        failures.push(`${ctx.group}:${messages.length}:${error.message}`);
      }
    }
    const app = await boot({
      imports: [QueueModule.forRoot({ connection: redisUrl(), prefix: uniquePrefix() }), fixed()],
      providers: [Flaky],
    });
    const events = app.get<FixedQueue<{ n: number }>>('nrq:fixed_queue:events');
    await events.pushMany('bad', [{ n: 1 }, { n: 2 }, { n: 3 }, { n: 4 }]);
    await pollUntil(() => failures.length === 1, 'onFailed');
    expect(failures).toEqual(['bad:4:upstream down']);
    expect(expectedErrors()).toHaveLength(1);
    expect(seen).toEqual(['bad#1', 'bad#2', 'bad#3']);
    await events.pushMany('good', [{ n: 1 }, { n: 2 }, { n: 3 }, { n: 4 }]);
    await pollUntil(() => seen.includes('good#1'), 'the next batch');
  });

  it('waits in app.close() for a running handler', async () => {
    const started = deferred();
    let finished = false;
    @Injectable()
    class Slow {
      @BatchConsumer('events')
      async handle() {
        started.resolve();
        await new Promise((resolve) => setTimeout(resolve, 300));
        finished = true;
      }
    }
    const app = await createApp({
      imports: [QueueModule.forRoot({ connection: redisUrl(), prefix: uniquePrefix() }), fixed()],
      providers: [Slow],
    });
    await app.get<FixedQueue>('nrq:fixed_queue:events').pushMany('g', [1, 2, 3, 4]);
    await started.promise;
    await app.close();
    expect(finished).toBe(true);
  });

  it('consumes nothing in a producer-only process', async () => {
    const prefix = uniquePrefix();
    @Injectable()
    class Consumer {
      @BatchConsumer('events')
      handle(messages: unknown[]) {
        seen.push(`got ${messages.length}`);
      }
    }
    const app = await boot({
      imports: [QueueModule.forRoot({ connection: redisUrl(), prefix, consumers: false }), fixed()],
      providers: [Consumer],
    });
    const events = app.get<FixedQueue>('nrq:fixed_queue:events');
    await events.pushMany('g', [1, 2, 3, 4, 5]);
    // A consumer app on the same prefix takes them: proof that they were due and waiting.
    await boot({ imports: [QueueModule.forRoot({ connection: redisUrl(), prefix }), fixed()], providers: [Consumer] });
    await pollUntil(async () => (await events.stats()).delivered === 5, 'the other app to consume');
    expect(seen.length).toBeGreaterThan(0);
  });

  it('sleeps when idle instead of polling in a loop', async () => {
    const prefix = uniquePrefix();
    @Injectable()
    class Idle {
      @BatchConsumer('events')
      batches() {}
      @DelayConsumer('tasks')
      tasks() {}
    }
    // A server of its own: MONITOR then sees this app alone, and ioredis' MONITOR connection cannot
    // receive other tests' command lines before it has switched to monitoring (its queue state error).
    const server = await startRedis();
    const monitor = new IORedis(server.url);
    const commands: string[] = [];
    let app: INestApplication | undefined;
    try {
      const monitoring = await monitor.monitor();
      monitoring.on('monitor', (_time: string, args: string[], source: string) => {
        // Commands run inside a script are logged too (source "lua"): count only what the app sends.
        if (source !== 'lua' && args.some((a) => a.includes(prefix))) commands.push(args[0]);
      });
      app = await boot({
        imports: [QueueModule.forRoot({ connection: server.url, prefix, idlePollMs: 250 }), fixed(), delay()],
        providers: [Idle],
      });
      const from = commands.length;
      await new Promise((resolve) => setTimeout(resolve, 1000)); // a measurement window, not a synchronisation
      const sent = commands.length - from;
      monitoring.disconnect();
      // 4 shards polled every 250 ms: about 16 scripts in the second, plus each shard's first poll and the
      // wake-up channels' SUBSCRIBEs when they land in the window; a busy loop would send thousands.
      expect(sent).toBeGreaterThan(4);
      expect(sent).toBeLessThanOrEqual(4 * 5 + 4 + 4);
    } finally {
      monitor.disconnect();
      if (app) await harness.close(app);
      await server.stop();
    }
  });

  it('fails start-up clearly on an unknown queue, a missing scheduler and bad module options', async () => {
    @Injectable()
    class Lost {
      @BatchConsumer('nope')
      handle() {}
    }
    await expect(
      createApp({ imports: [QueueModule.forRoot({ connection: redisUrl() }), fixed()], providers: [Lost] }),
    ).rejects.toThrow(UnknownQueueError);
    await expect(
      createApp({ imports: [QueueModule.forRoot({ connection: redisUrl() }), fixed()], providers: [Lost] }),
    ).rejects.toThrow(/No fixed queue named "nope" is registered \(registered: "events"\)/);

    @Injectable()
    class Cron {
      @BatchConsumer('events', { cron: '* * * * * *' })
      handle() {}
    }
    await expect(
      createApp({ imports: [QueueModule.forRoot({ connection: redisUrl() }), fixed()], providers: [Cron] }),
    ).rejects.toThrow(/ScheduleModule.forRoot\(\)/);

    await expect(
      createApp({ imports: [QueueModule.forRoot({ connection: redisUrl(), prefix: 'has space' })] }),
    ).rejects.toThrow(QueueConfigError);
    await expect(createApp({ imports: [QueueModule.forRoot({} as never)] })).rejects.toThrow(/connection is required/);
    await expect(
      createApp({
        imports: [
          QueueModule.forRoot({ connection: redisUrl() }),
          QueueModule.registerDelayQueue({ name: 'x', backoff: { type: 'linear' } } as never),
        ],
      }),
    ).rejects.toThrow(/backoff.type must be one of the following values/);
  });

  it('shares one queue between modules that register it alike, and refuses conflicting options', async () => {
    @Module({ imports: [fixed()], exports: [] })
    class FeatureA {}
    @Module({ imports: [fixed()] })
    class FeatureB {}
    const app = await boot({
      imports: [QueueModule.forRoot({ connection: redisUrl(), prefix: uniquePrefix() }), FeatureA, FeatureB],
    });
    expect(app).toBeDefined();
    @Module({ imports: [QueueModule.registerFixedQueue({ name: 'events', capacity: 5, batchSize: 1 })] })
    class Reports {}
    await expect(
      createApp({
        imports: [QueueModule.forRoot({ connection: redisUrl(), prefix: uniquePrefix() }), FeatureA, Reports],
      }),
    ).rejects.toThrow(
      'The queue "events" is registered twice with different options (' +
        'shards: 2 in FeatureA, not given in Reports; batchSize: 4 in FeatureA, 1 in Reports; ' +
        'capacity: 100 in FeatureA, 5 in Reports; maxWaitMs: 20 in FeatureA, not given in Reports). ' +
        'Register it once, with its options, in one module: a registered queue can be injected and consumed in every module',
    );
  });

  it('makes a queue registered in one module injectable and consumable by name in every other', async () => {
    @Module({ imports: [fixed()] })
    class Ingest {}
    @Injectable()
    class Producer {
      constructor(@InjectFixedQueue('events') readonly events: FixedQueue<string>) {}
    }
    @Injectable()
    class Consumer {
      @BatchConsumer('events')
      handle(messages: string[]) {
        seen.push(...messages);
      }
    }
    // Neither imports Ingest nor registers the queue again.
    @Module({ providers: [Producer, Consumer] })
    class Tenants {}
    const app = await boot({
      imports: [QueueModule.forRoot({ connection: redisUrl(), prefix: uniquePrefix() }), Ingest, Tenants],
    });
    await app.get(Producer).events.push('tenant-1', 'signed up');
    await pollUntil(() => seen.includes('signed up'), 'the message consumed in another module');
  });

  it('names a missing QueueModule.forRoot instead of an unresolved dependency', async () => {
    for (const registration of [
      fixed(),
      QueueModule.registerDelayQueueAsync({ name: 'tasks', useFactory: () => ({}) }),
    ])
      await expect(createApp({ imports: [registration] })).rejects.toThrow(
        /^QueueModule\.register(FixedQueue|DelayQueueAsync)\(\{ name: "(events|tasks)" \}\) needs QueueModule\.forRoot\(\), which no module imports: import QueueModule\.forRoot\(\{ connection \}\)/,
      );
  });

  it('says which kind a queue is, and which decorator fits, for a decorator on the other kind', async () => {
    @Injectable()
    class Mistaken {
      @DelayConsumer('events')
      handle() {}
    }
    const start = createApp({
      imports: [QueueModule.forRoot({ connection: redisUrl() }), fixed()],
      providers: [Mistaken],
    });
    await expect(start).rejects.toThrow(UnknownQueueError);
    await expect(start).rejects.toThrow(
      'No delay queue named "events": "events" is a FixedQueue (QueueModule.registerFixedQueue). ' +
        "Consume it with @BatchConsumer('events') and inject it with @InjectFixedQueue('events'); " +
        '@DelayConsumer and @InjectDelayQueue are for a DelayQueue',
    );
  });
});
