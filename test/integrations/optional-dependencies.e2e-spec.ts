import { spawnSync } from 'node:child_process';
import { compileLibrary, libraryEnv } from '@test/support/compile-library';
import { redisUrl, uniquePrefix } from '@test/support/testing';

/**
 * Runs in plain Node on the compiled library, with prom-client, @nestjs/terminus, @opentelemetry/api and
 * wasmoon-lua5.1 made impossible to resolve, as in an application that installed none of them.
 */
const WITHOUT_PEERS = `
const Module = require('node:module');
const resolve = Module._resolveFilename;
Module._resolveFilename = function (request, ...rest) {
  if (['prom-client', '@nestjs/terminus', '@opentelemetry/api', 'wasmoon-lua5.1'].includes(request)) {
    const error = new Error("Cannot find module '" + request + "'");
    error.code = 'MODULE_NOT_FOUND';
    throw error;
  }
  return resolve.call(this, request, ...rest);
};
require('reflect-metadata');
const { Module: NestModule } = require('@nestjs/common');
const { NestFactory } = require('@nestjs/core');
const lib = require(process.env.NRQ_LIB);

function appModule(...extra) {
  return appWith({}, ...extra);
}
function appWith(root, ...extra) {
  class App {}
  NestModule({
    imports: [
      lib.QueueModule.forRoot({ connection: process.env.REDIS_URL, prefix: process.env.PREFIX, ...root }),
      lib.QueueModule.registerFixedQueue({ name: 'q' }),
      ...extra,
    ],
  })(App);
  return App;
}
const failure = (error) => error.name + ': ' + error.message;

(async () => {
  const out = {};
  const app = await NestFactory.createApplicationContext(appModule(), { logger: false, abortOnError: false });
  out.pushed = await app.get(lib.getFixedQueueToken('q')).push('g', 1);
  out.health = await app.get(lib.QueueHealthIndicator).isHealthy('q').then(() => 'resolved', failure);
  await app.close();
  out.metrics = await NestFactory.createApplicationContext(appModule(lib.QueueMetricsModule.register()), { logger: false, abortOnError: false }).then(() => 'started', failure);
  out.tracing = await NestFactory.createApplicationContext(appWith({ tracing: true }), { logger: false, abortOnError: false }).then(() => 'started', failure);
  out.memory = await NestFactory.createApplicationContext(appWith({ connection: 'memory://' }), { logger: false, abortOnError: false }).then(() => 'started', failure);
  console.log(JSON.stringify(out));
  process.exit(0);
})().catch((error) => {
  console.error(error);
  process.exit(1);
});
`;

describe('optional dependencies', () => {
  it('the library loads and queues work without prom-client, @nestjs/terminus, @opentelemetry/api and wasmoon-lua5.1; their features say what to install', () => {
    const library = compileLibrary();
    try {
      const child = spawnSync(process.execPath, ['-e', WITHOUT_PEERS], {
        env: { ...libraryEnv(library.dir), REDIS_URL: redisUrl(), PREFIX: uniquePrefix() },
        encoding: 'utf8',
        timeout: 30_000,
      });
      expect(child.stderr).toBe('');
      expect(JSON.parse(child.stdout)).toEqual({
        pushed: { dropped: 0 },
        health:
          'QueueConfigError: QueueHealthIndicator needs the optional dependency @nestjs/terminus, which is not installed: npm install @nestjs/terminus',
        metrics:
          'QueueConfigError: QueueMetricsModule needs the optional dependency prom-client, which is not installed: npm install prom-client',
        tracing:
          'QueueConfigError: tracing on the fixed queue "q" needs the optional dependency @opentelemetry/api, which is not installed: npm install @opentelemetry/api',
        memory:
          "QueueConfigError: connection: 'memory://' needs the optional dependency wasmoon-lua5.1, which is not installed: npm install wasmoon-lua5.1",
      });
    } finally {
      library.remove();
    }
  });
});
