// What the worker scripts of test/faults share: their providers and root module made without decorator
// syntax (plain Node), and how they start: their application context, "ready" on stdout once it runs
// (what test/support/worker-processes.ts and worker-kill wait for), and an exit once the test process
// that spawned it is gone (its standard input ends), rather than run on for nobody.
'use strict';

const { Injectable, Module } = require('@nestjs/common');
const { NestFactory } = require('@nestjs/core');

/** `type` as an injectable provider, each of its methods named in `decorators` decorated as `@decorator` would. */
exports.provider = (type, decorators) => {
  for (const [method, decorator] of Object.entries(decorators))
    decorator(type.prototype, method, Object.getOwnPropertyDescriptor(type.prototype, method));
  Injectable()(type);
  return type;
};

/** The worker's root module: `@Module({ imports, providers })`. */
exports.workerModule = (imports, providers) => {
  class WorkerModule {}
  Module({ imports, providers })(WorkerModule);
  return WorkerModule;
};

/** `shutdownHooks`: SIGTERM closes the application (its consumers give back their work) instead of killing it. */
exports.startWorker = (module, { shutdownHooks = true } = {}) => {
  NestFactory.createApplicationContext(module, { logger: ['error'] }).then(
    (app) => {
      if (shutdownHooks) app.enableShutdownHooks();
      process.stdout.write('ready\n');
    },
    (error) => {
      process.stderr.write(`worker failed to start: ${error.stack}\n`);
      process.exit(1);
    },
  );
  process.stdin.on('end', () => process.exit(0));
  process.stdin.resume();
};
