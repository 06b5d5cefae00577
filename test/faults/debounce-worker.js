// A consumer process of a DelayQueue "digests" (one slot) whose handler takes 1.5 s, for tests that no
// two runs of one task id overlap across processes while schedules replace it. Each run logs its start
// and end to Redis ("start|<n>|<ms>", "end|<n>|<ms>", n the payload's, ms this machine's clock).
// Plain Node (no test runner): it runs the library compiled by test/support/compile-library.ts.
'use strict';

require('reflect-metadata');
const IORedis = require('ioredis');
const { setTimeout: delay } = require('node:timers/promises');
const { provider, startWorker, workerModule } = require('./worker-start');
const { DelayConsumer, QueueModule } = require(process.env.NRQ_LIB);

const { REDIS_URL, PREFIX, LOG_KEY } = process.env;
const log = new IORedis(REDIS_URL);

class Digests {
  async run(payload) {
    await log.rpush(LOG_KEY, `start|${payload.n}|${Date.now()}`);
    await delay(1_500);
    await log.rpush(LOG_KEY, `end|${payload.n}|${Date.now()}`);
  }
}
startWorker(
  workerModule(
    [
      QueueModule.forRoot({ connection: REDIS_URL, prefix: PREFIX }),
      QueueModule.registerDelayQueue({ name: 'digests', shards: 2 }),
    ],
    [provider(Digests, { run: DelayConsumer('digests', { concurrency: 1 }) })],
  ),
);
