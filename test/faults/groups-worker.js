// A FixedQueue "events" consumer in a process of its own, for tests of the per-group controls across
// processes (a group paused, rate-limited or held by one process, as every other one sees it). OPTIONS is
// the queue's options as JSON; IDLE_POLL_MS its consumers' idle poll (a minute by default, so that only a
// wake-up brings them sooner). Every batch start is logged to Redis before the handler does anything
// ("<group>|<attempt>|<pid>|<claimedAt>|<n>,<n>,..."); a batch of a group in the set DOWN_KEY fails.
// Plain Node (no test runner): it runs the library compiled by test/support/compile-library.ts.
'use strict';

require('reflect-metadata');
const IORedis = require('ioredis');
const { provider, startWorker, workerModule } = require('./worker-start');
const { BatchConsumer, QueueModule } = require(process.env.NRQ_LIB);

const { REDIS_URL, PREFIX, LOG_KEY, DOWN_KEY, OPTIONS } = process.env;
const IDLE_POLL_MS = Number(process.env.IDLE_POLL_MS ?? 60_000);
const log = new IORedis(REDIS_URL, { enableAutoPipelining: true });

class Handler {
  async handle(messages, ctx) {
    const ns = messages.map((message) => message.n).join(',');
    await log.rpush(LOG_KEY, `${ctx.group}|${ctx.attempt}|${process.pid}|${ctx.claimedAt}|${ns}`);
    if (DOWN_KEY && (await log.sismember(DOWN_KEY, ctx.group))) throw new Error('upstream down');
  }
}
startWorker(
  workerModule(
    [
      QueueModule.forRoot({ connection: REDIS_URL, prefix: PREFIX, idlePollMs: IDLE_POLL_MS, shutdownTimeoutMs: 500 }),
      QueueModule.registerFixedQueue({ name: 'events', ...JSON.parse(OPTIONS) }),
    ],
    [provider(Handler, { handle: BatchConsumer('events', { concurrency: 4 }) })],
  ),
);
