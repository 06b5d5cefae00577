// A consumer process whose handlers hang and ignore their signal, for tests of attempts across restarts:
// an ordered at-least-once FixedQueue "events" and a DelayQueue "jobs", handlerTimeoutMs 300 and
// maxAttempts 3. Each run logs its start ("start|<queue>|<attempt>") and the abort of its signal
// ("timeout|<queue>|<attempt>") to Redis. SIGTERM closes the application, which gives the work back.
// Plain Node (no test runner): it runs the library compiled by test/support/compile-library.ts.
'use strict';

require('reflect-metadata');
const IORedis = require('ioredis');
const { provider, startWorker, workerModule } = require('./worker-start');
const { BatchConsumer, DelayConsumer, HandlerTimeoutError, QueueModule } = require(process.env.NRQ_LIB);

const { REDIS_URL, PREFIX, LOG_KEY } = process.env;
const log = new IORedis(REDIS_URL, { enableAutoPipelining: true });

function hang(queue, ctx) {
  ctx.signal.addEventListener('abort', () => {
    if (ctx.signal.reason instanceof HandlerTimeoutError) void log.rpush(LOG_KEY, `timeout|${queue}|${ctx.attempt}`);
  });
  return log.rpush(LOG_KEY, `start|${queue}|${ctx.attempt}`).then(() => new Promise(() => undefined));
}

class Poison {
  batch(_messages, ctx) {
    return hang('events', ctx);
  }

  task(_payload, ctx) {
    return hang('jobs', ctx);
  }
}
const attempts = { maxAttempts: 3 };
startWorker(
  workerModule(
    [
      QueueModule.forRoot({ connection: REDIS_URL, prefix: PREFIX, shutdownTimeoutMs: 200 }),
      QueueModule.registerFixedQueue({
        name: 'events',
        shards: 1,
        maxWaitMs: 0,
        delivery: 'at-least-once',
        ...attempts,
      }),
      QueueModule.registerDelayQueue({ name: 'jobs', shards: 1, ...attempts }),
    ],
    [
      provider(Poison, {
        batch: BatchConsumer('events', { handlerTimeoutMs: 300 }),
        task: DelayConsumer('jobs', { handlerTimeoutMs: 300 }),
      }),
    ],
  ),
);
