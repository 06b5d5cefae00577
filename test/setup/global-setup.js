// Jest globalSetup: unless REDIS_URL names a server, start a private redis-server for this run.
// Workers are forked after this runs, so they inherit REDIS_URL from process.env.
'use strict';

const { startRedis } = require('../../scripts/redis');

module.exports = async function globalSetup() {
  if (process.env.REDIS_URL) return;
  const redis = await startRedis();
  process.env.REDIS_URL = redis.url;
  globalThis.__NRQ_REDIS__ = redis;
};
