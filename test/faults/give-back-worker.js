// A consumer process whose handlers never settle, for tests of what its shutdown gives back: an ordered
// at-least-once FixedQueue "events", an ordered at-most-once one "loose" (batches of one message) and a
// DelayQueue "jobs", every lease 30 s. Each handler start is logged to Redis ("<queue>|<group or id>");
// SIGTERM closes the application, which abandons them after shutdownTimeoutMs (300 ms) and gives their
// work back.
// Plain Node (no test runner): it runs the library compiled by test/support/compile-library.ts.
'use strict';

require('reflect-metadata');
const IORedis = require('ioredis');
const { provider, startWorker, workerModule } = require('./worker-start');
const { BatchConsumer, DelayConsumer, QueueModule } = require(process.env.NRQ_LIB);

const { REDIS_URL, PREFIX, LOG_KEY } = process.env;
const log = new IORedis(REDIS_URL, { enableAutoPipelining: true });
const never = () => new Promise(() => undefined);

class Handlers {
  async batch(_messages, ctx) {
    await log.rpush(LOG_KEY, `events|${ctx.group}`);
    return never();
  }

  async loose(_messages, ctx) {
    await log.rpush(LOG_KEY, `loose|${ctx.group}`);
    return never();
  }

  async task(_payload, ctx) {
    await log.rpush(LOG_KEY, `jobs|${ctx.id}`);
    return never();
  }
}
const ordered = { shards: 2, maxWaitMs: 0, leaseMs: 30_000 };
startWorker(
  workerModule(
    [
      QueueModule.forRoot({ connection: REDIS_URL, prefix: PREFIX, shutdownTimeoutMs: 300 }),
      QueueModule.registerFixedQueue({ name: 'events', ...ordered, delivery: 'at-least-once' }),
      QueueModule.registerFixedQueue({ name: 'loose', ...ordered, batchSize: 1 }),
      QueueModule.registerDelayQueue({ name: 'jobs', shards: 2, leaseMs: 30_000 }),
    ],
    [
      provider(Handlers, {
        batch: BatchConsumer('events'),
        loose: BatchConsumer('loose'),
        task: DelayConsumer('jobs'),
      }),
    ],
  ),
);
