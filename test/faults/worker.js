// A DelayQueue consumer in a process of its own, for tests that SIGKILL it mid-handler.
// Plain Node (no test runner): it runs the library compiled by test/support/compile-library.ts.
// Every handler start is logged to Redis as "<id>|<attempt>|<pid>" before the handler does anything,
// so the test can tell which process ran which attempt.
'use strict';

require('reflect-metadata');
const { Injectable, Module } = require('@nestjs/common');
const { NestFactory } = require('@nestjs/core');
const IORedis = require('ioredis');
const { DelayConsumer, QueueModule } = require(process.env.NRQ_LIB);

const { REDIS_URL, PREFIX, LOG_KEY } = process.env;
const log = new IORedis(REDIS_URL, { enableAutoPipelining: true });

class Handler {
  async handle(_payload, ctx) {
    await log.rpush(LOG_KEY, `${ctx.id}|${ctx.attempt}|${process.pid}`);
    // Long enough that a kill often lands while handlers are running.
    await new Promise((resolve) => setTimeout(resolve, 5 + Math.floor(Math.random() * 45)));
  }
}
DelayConsumer('jobs', { concurrency: 32 })(
  Handler.prototype,
  'handle',
  Object.getOwnPropertyDescriptor(Handler.prototype, 'handle'),
);
Injectable()(Handler);

class WorkerModule {}
Module({
  imports: [
    QueueModule.forRoot({ connection: REDIS_URL, prefix: PREFIX, idlePollMs: 200 }),
    QueueModule.registerDelayQueue({ name: 'jobs', shards: 8, visibilityTimeoutMs: 1000, maxAttempts: 1000 }),
  ],
  providers: [Handler],
})(WorkerModule);

NestFactory.createApplicationContext(WorkerModule, { logger: ['error'] }).then(
  () => process.stdout.write('ready\n'),
  (error) => {
    process.stderr.write(`worker failed to start: ${error.stack}\n`);
    process.exit(1);
  },
);

// Orphaned (the test process died): stop rather than consume on for nobody.
process.stdin.on('end', () => process.exit(0));
process.stdin.resume();
