#!/usr/bin/env node
// Usage: node scripts/with-redis.js <cmd> [args...]
// Runs the command with REDIS_URL pointing at a private redis-server that lives exactly as long as
// the command, unless REDIS_URL or REDIS_CLUSTER already names a server to use (or REDIS_URL=memory://:
// the application's queues in its own memory, no server).
'use strict';

const { spawn } = require('node:child_process');
const os = require('node:os');
const { ensureRedisServer, startRedis } = require('./redis');

const [command, ...args] = process.argv.slice(2);
if (!command) {
  console.error('usage: node scripts/with-redis.js <cmd> [args...]');
  process.exit(2);
}

// Installed before redis starts, so a Ctrl-C during start-up still cleans up.
let child = null;
let interrupted = null;
for (const signal of ['SIGINT', 'SIGTERM']) {
  process.on(signal, () => {
    if (child) child.kill(signal);
    else interrupted = signal;
  });
}

function run(env) {
  return new Promise((resolve) => {
    child = spawn(command, args, { stdio: 'inherit', env });
    child.once('error', (err) => {
      console.error(`[with-redis] cannot run ${command}: ${err.message}`);
      resolve(127);
    });
    child.once('exit', (code, signal) => resolve(code ?? 128 + (os.constants.signals[signal] || 0)));
  });
}

async function main() {
  const url = process.env.REDIS_URL;
  // memory://: no server at all. The application's queues and its own client must share one instance,
  // and a demo needs time to pass: a named instance on the wall clock, unless the URL says otherwise.
  if (url && /^memory:\/\/$/i.test(url)) return run({ ...process.env, REDIS_URL: 'memory://local?clock=system' });
  if (url || process.env.REDIS_CLUSTER) return run(process.env);

  ensureRedisServer();
  // Ctrl-C reaches the server as well, so a start-up failure after it is not worth reporting.
  const redis = await startRedis().catch((err) => {
    if (interrupted) return null;
    throw err;
  });
  if (!redis || interrupted) {
    await redis?.stop();
    return 128 + os.constants.signals[interrupted];
  }
  try {
    console.error(`[with-redis] started a private redis-server on ${redis.url} (data in a temporary dir)`);
    return await run({ ...process.env, REDIS_URL: redis.url });
  } finally {
    await redis.stop();
  }
}

main().then(
  (code) => process.exit(code),
  (err) => {
    console.error(`[with-redis] ${err.message}`);
    process.exit(1);
  },
);
