// A queue consumer in a process of its own, for tests that SIGKILL it mid-handler: a DelayQueue
// consumer, or with KIND=batch an ordered at-least-once FixedQueue consumer.
// Plain Node (no test runner): it runs the library compiled by test/support/compile-library.ts.
// Every handler start is logged to Redis before the handler does anything ("<id>|<attempt>|<pid>", or
// "<group>|<attempt>|<pid>|<seq>,<seq>,..." for batches), so the test can tell which process ran what.
'use strict';

require('reflect-metadata');
const IORedis = require('ioredis');
const { provider, startWorker, workerModule } = require('./worker-start');
const { BatchConsumer, DelayConsumer, QueueModule } = require(process.env.NRQ_LIB);

const { REDIS_URL, PREFIX, LOG_KEY, KIND } = process.env;
const log = new IORedis(REDIS_URL, { enableAutoPipelining: true });
const batches = KIND === 'batch';

// Long enough that a kill often lands while handlers are running.
const work = () => new Promise((resolve) => setTimeout(resolve, 5 + Math.floor(Math.random() * 45)));

class Handler {
  async handle(payload, ctx) {
    const line = batches
      ? `${ctx.group}|${ctx.attempt}|${process.pid}|${payload.map((message) => message.seq).join(',')}`
      : `${ctx.id}|${ctx.attempt}|${process.pid}`;
    await log.rpush(LOG_KEY, line);
    await work();
  }
}
const consumer = batches ? BatchConsumer('events', { concurrency: 16 }) : DelayConsumer('jobs', { concurrency: 32 });

startWorker(
  workerModule(
    [
      QueueModule.forRoot({ connection: REDIS_URL, prefix: PREFIX, idlePollMs: 200 }),
      batches
        ? QueueModule.registerFixedQueue({
            name: 'events',
            shards: 8,
            delivery: 'at-least-once',
            batchSize: 20,
            maxWaitMs: 0,
            capacity: 100_000,
            leaseMs: 1000,
            maxAttempts: 1000,
          })
        : QueueModule.registerDelayQueue({ name: 'jobs', shards: 8, leaseMs: 1000, maxAttempts: 1000 }),
    ],
    [provider(Handler, { handle: consumer })],
  ),
  { shutdownHooks: false },
);
