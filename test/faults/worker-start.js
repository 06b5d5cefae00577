// How every worker script of test/faults starts: its application context, "ready" on stdout once it runs
// (what test/support/worker-processes.ts and worker-kill wait for), and an exit once the test process
// that spawned it is gone (its standard input ends), rather than run on for nobody.
'use strict';

const { NestFactory } = require('@nestjs/core');

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
