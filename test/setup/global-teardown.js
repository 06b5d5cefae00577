// Jest globalTeardown: stops the redis-server that global-setup.js started, if it started one.
'use strict';

module.exports = async function globalTeardown() {
  const redis = globalThis.__NRQ_REDIS__;
  if (!redis) return;
  delete globalThis.__NRQ_REDIS__;
  // In watch mode setup runs again for the next run: it must not mistake our URL for a user's.
  if (process.env.REDIS_URL === redis.url) delete process.env.REDIS_URL;
  await redis.stop();
};
