// One process of an application in the mixed-version suite: the library of one release or of the
// current build (NRQ_LIB), the same queues in every process, so that processes of two versions share
// one Redis as they do during a rolling deploy. Plain Node, no test runner, like test/faults' workers.
//
// The test drives it through the IPC channel: `{ n, queue, method, args }` calls that queue's public
// method and answers `{ n, value }` or `{ n, error }`. With CONSUME=1 its handlers run; each logs its
// start and its end to Redis (LOG_KEY) before returning, so what a killed process ran is on record.
'use strict';

require('reflect-metadata');
const IORedis = require('ioredis');
const { provider, workerModule } = require('../faults/worker-start');
const { NestFactory } = require('@nestjs/core');
const lib = require(process.env.NRQ_LIB);

const { BatchConsumer, DelayConsumer, PartialBatchError, QueueModule, Recurring, TaskSource } = lib;
const { REDIS_URL, PREFIX, LOG_KEY, VERSION } = process.env;
const consume = process.env.CONSUME === '1';
const log = new IORedis(REDIS_URL);

/** Queues of every process; the test picks the one a scenario needs. */
const FIXED = [
  // Ordered, at-least-once: order, one batch of a group at a time, nothing lost through kills.
  { name: 'ordered', delivery: 'at-least-once', leaseMs: 1000, maxAttempts: 50 },
  // Failures, partial acknowledgements, retries and dead letters.
  {
    name: 'failing',
    delivery: 'at-least-once',
    leaseMs: 1000,
    maxAttempts: 3,
    backoff: { type: 'fixed', delayMs: 50 },
  },
  // A group whose attempts run out is paused rather than dead-lettered.
  { name: 'exhausting', delivery: 'at-least-once', leaseMs: 1000, maxAttempts: 2, onExhausted: 'pause-group' },
  // At-most-once, with a group rate limit.
  { name: 'loose', groupRateLimit: { max: 20, durationMs: 100 } },
];
const DELAY = [{ name: 'jobs', leaseMs: 1000, maxAttempts: 3, backoff: { type: 'fixed', delayMs: 50 } }];

const record = (entry) => log.rpush(LOG_KEY, JSON.stringify({ ...entry, pid: process.pid, v: VERSION, t: Date.now() }));
const pause = (ms) => new Promise((resolve) => setTimeout(resolve, ms));

/** A handler's work, as its payload asks: how long it takes, and whether this attempt fails. */
async function work(payload, attempt) {
  await pause(payload.ms ?? 5 + Math.floor(Math.random() * 20));
  if (payload.failUntil && attempt < payload.failUntil) throw new Error(`fails until attempt ${payload.failUntil}`);
  if (payload.poison && !(await log.exists(`${LOG_KEY}:cured`))) throw new Error('poison');
}

class Handlers {
  async batch(queue, messages, ctx) {
    const seqs = messages.map((message) => message.seq);
    await record({ k: 'start', q: queue, group: ctx.group, attempt: ctx.attempt, seqs });
    let acked = seqs.length;
    try {
      for (const [index, message] of messages.entries()) {
        if (message.partialAt !== undefined && ctx.attempt === 1 && index === message.partialAt) {
          acked = index;
          throw new PartialBatchError(index);
        }
        await work(message, ctx.attempt);
      }
    } catch (error) {
      await record({ k: 'end', q: queue, group: ctx.group, attempt: ctx.attempt, seqs, ok: false, acked });
      throw error;
    }
    await record({ k: 'end', q: queue, group: ctx.group, attempt: ctx.attempt, seqs, ok: true, acked });
  }

  async task(payload, ctx) {
    const occurrence = ctx.repeat?.occurrence;
    const entry = { q: 'jobs', id: ctx.id, attempt: ctx.attempt, runAt: ctx.runAt, tag: payload.tag, occurrence };
    await record({ k: 'start', ...entry });
    try {
      await work(payload, ctx.attempt);
    } catch (error) {
      await record({ k: 'end', ...entry, ok: false });
      throw error;
    }
    await record({ k: 'end', ...entry, ok: true });
  }

  async tick(ctx) {
    await record({ k: 'start', q: 'tick', id: ctx.name, occurrence: ctx.occurrence });
    await pause(20);
    await record({ k: 'end', q: 'tick', id: ctx.name, occurrence: ctx.occurrence, ok: true });
  }
}
// The application's database for the DelayQueue's task source: a hash of task id → due time, which
// the test writes as an application would its rows.
Handlers.prototype.rows = async function* () {
  for (const [id, runAt] of Object.entries(await log.hgetall(`${LOG_KEY}:rows`)))
    yield { id, runAt: Number(runAt), payload: { tag: id } };
};
for (const { name } of FIXED)
  Handlers.prototype[name] = function (messages, ctx) {
    return this.batch(name, messages, ctx);
  };

const decorators = consume
  ? {
      ...Object.fromEntries(FIXED.map(({ name }) => [name, BatchConsumer(name, { concurrency: 8 })])),
      task: DelayConsumer('jobs', { concurrency: 16 }),
      ...(process.env.RECURRING ? { tick: Recurring({ name: 'tick', everyMs: Number(process.env.RECURRING) }) } : {}),
    }
  : {};
decorators.rows = TaskSource('jobs');

const root = workerModule(
  [
    QueueModule.forRoot({ connection: REDIS_URL, prefix: PREFIX, idlePollMs: 200, consumers: consume }),
    ...FIXED.map((options) =>
      QueueModule.registerFixedQueue({ shards: 4, batchSize: 10, maxWaitMs: 0, capacity: 100_000, ...options }),
    ),
    ...DELAY.map((options) => QueueModule.registerDelayQueue({ shards: 4, ...options })),
  ],
  [provider(Handlers, decorators)],
);

NestFactory.createApplicationContext(root, { logger: ['error'] }).then(
  (app) => {
    app.enableShutdownHooks();
    const queues = Object.fromEntries([
      ...FIXED.map(({ name }) => [name, app.get(lib.getFixedQueueToken(name))]),
      ...DELAY.map(({ name }) => [name, app.get(lib.getDelayQueueToken(name))]),
    ]);
    process.on('message', ({ n, queue, method, args }) => {
      Promise.resolve()
        .then(() => queues[queue][method](...args))
        .then(
          (value) => process.send({ n, value: value ?? null }),
          (error) => process.send({ n, error: `${error.name}: ${error.message}` }),
        );
    });
    process.send({ ready: true });
  },
  (error) => {
    process.stderr.write(`mixed worker failed to start: ${error.stack}\n`);
    process.exit(1);
  },
);
// Once the test process is gone, nobody is left to stop this one.
process.on('disconnect', () => process.exit(0));
