// A producer-only process beside task-source-worker.js (an API pod): the same DelayQueue "meals" (4
// shards, on QUEUE_URL), no @TaskSource and no consumers.
// Plain Node (no test runner): it runs the library compiled by test/support/compile-library.ts.
'use strict';

require('reflect-metadata');
const { startWorker, workerModule } = require('./worker-start');
const { QueueModule } = require(process.env.NRQ_LIB);

startWorker(
  workerModule(
    [
      QueueModule.forRoot({ connection: process.env.QUEUE_URL, prefix: 'tsw', idlePollMs: 60_000, consumers: false }),
      QueueModule.registerDelayQueue({ name: 'meals', shards: 4 }),
    ],
    [],
  ),
);
