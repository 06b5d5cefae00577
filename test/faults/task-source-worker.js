// A process whose DelayQueue "meals" (4 shards, on QUEUE_URL) has a @TaskSource listing ROWS tasks
// "meal:<i>", due in an hour, LIST_DELAY_MS (default 0) after it is asked (a slow database). Each listing
// logs "list|<pid>|<ms>" to LOG_KEY on REDIS_URL, a server apart from the queue's, so that a FLUSHALL of
// the queue's server keeps the log.
// Plain Node (no test runner): it runs the library compiled by test/support/compile-library.ts.
'use strict';

require('reflect-metadata');
const IORedis = require('ioredis');
const { provider, startWorker, workerModule } = require('./worker-start');
const { QueueModule, TaskSource } = require(process.env.NRQ_LIB);

const { REDIS_URL, QUEUE_URL, LOG_KEY, ROWS, LIST_DELAY_MS = '0' } = process.env;
const log = new IORedis(REDIS_URL);

class Meals {
  async *meals() {
    await log.rpush(LOG_KEY, `list|${process.pid}|${Date.now()}`);
    await new Promise((resolve) => setTimeout(resolve, Number(LIST_DELAY_MS)));
    for (let i = 0; i < Number(ROWS); i++) yield { id: `meal:${i}`, delayMs: 3600_000, payload: { grams: i } };
  }
}
startWorker(
  workerModule(
    [
      QueueModule.forRoot({ connection: QUEUE_URL, prefix: 'tsw', idlePollMs: 60_000 }),
      QueueModule.registerDelayQueue({ name: 'meals', shards: 4 }),
    ],
    [provider(Meals, { meals: TaskSource('meals') })],
  ),
);
