// A process with one `@Recurring({ everyMs: EVERY_MS, missed: MISSED })` method, for tests that run
// several of them, SIGKILL one mid-run, or stop them all for a while. Each run logs its start and its
// end to Redis ("start|<occurrence>|<attempt>|<pid>|<ms>", "end|<occurrence>|<attempt>|<pid>|<ms>")
// around WORK_MS of work, so the test can tell which process ran which tick, and when; "boot|<ms>"
// when it starts.
// Plain Node (no test runner): it runs the library compiled by test/support/compile-library.ts.
'use strict';

require('reflect-metadata');
const IORedis = require('ioredis');
const { provider, startWorker, workerModule } = require('./worker-start');
const { QueueModule, Recurring } = require(process.env.NRQ_LIB);

const { REDIS_URL, PREFIX, LOG_KEY, EVERY_MS, MISSED = 'latest', WORK_MS = '0', CONSUMERS = '1' } = process.env;
const IDLE_POLL_MS = Number(process.env.IDLE_POLL_MS ?? 200);
const log = new IORedis(REDIS_URL, { enableAutoPipelining: true });

class Job {
  // Before any consumer starts: no tick is claimed by this process before this time.
  async onModuleInit() {
    await log.rpush(LOG_KEY, `boot|${Date.now()}`);
  }

  async tick(ctx) {
    await log.rpush(LOG_KEY, `start|${ctx.occurrence}|${ctx.attempt}|${process.pid}|${Date.now()}`);
    await new Promise((resolve) => setTimeout(resolve, Number(WORK_MS)));
    await log.rpush(LOG_KEY, `end|${ctx.occurrence}|${ctx.attempt}|${process.pid}|${Date.now()}`);
  }
}
startWorker(
  workerModule(
    [
      QueueModule.forRoot({
        connection: REDIS_URL,
        prefix: PREFIX,
        idlePollMs: IDLE_POLL_MS,
        consumers: CONSUMERS === '1',
      }),
    ],
    [provider(Job, { tick: Recurring({ everyMs: Number(EVERY_MS), missed: MISSED }) })],
  ),
);
