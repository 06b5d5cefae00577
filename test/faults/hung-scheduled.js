// A process whose scheduled @BatchConsumer (intervalMs) has a handler that never settles, with the
// default handlerTimeoutMs: it closes the application and must then exit by itself (nothing the
// library armed may keep it alive). Prints "closed <ms>" once app.close() resolved.
// Plain Node (no test runner): it runs the library compiled by test/support/compile-library.ts.
'use strict';

require('reflect-metadata');
const { NestFactory } = require('@nestjs/core');
const { provider, workerModule } = require('./worker-start');
const { ScheduleModule } = require('@nestjs/schedule');
const { BatchConsumer, QueueModule, getFixedQueueToken } = require(process.env.NRQ_LIB);

const { REDIS_URL, PREFIX } = process.env;
let hung;
const started = new Promise((resolve) => (hung = resolve));

class Digest {
  handle() {
    hung();
    return new Promise(() => undefined);
  }
}
const AppModule = workerModule(
  [
    ScheduleModule.forRoot(),
    QueueModule.forRoot({ connection: REDIS_URL, prefix: PREFIX, shutdownTimeoutMs: 200, commandTimeoutMs: 1000 }),
    QueueModule.registerFixedQueue({ name: 'digest', shards: 2, maxWaitMs: 0, delivery: 'at-least-once' }),
  ],
  [provider(Digest, { handle: BatchConsumer('digest', { intervalMs: 50 }) })],
);

(async () => {
  const app = await NestFactory.createApplicationContext(AppModule, { logger: ['error'] });
  await app.get(getFixedQueueToken('digest')).push('g', { n: 1 });
  await started;
  const closing = Date.now();
  await app.close();
  process.stdout.write(`closed ${Date.now() - closing}\n`);
})().catch((error) => {
  process.stderr.write(`${error.stack}\n`);
  process.exit(2);
});
