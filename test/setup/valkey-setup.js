// Jest globalSetup of the "valkey" project: unless NRQ_TEST_VALKEY names a Valkey server, start a
// private valkey-server (installed from Debian's backports when missing and running as root).
'use strict';

const { ensureValkeyServer, startRedis } = require('../../scripts/redis');

module.exports = async function valkeySetup() {
  if (process.env.NRQ_TEST_VALKEY) return;
  const valkey = await startRedis({ server: ensureValkeyServer });
  process.env.NRQ_TEST_VALKEY = valkey.url;
  globalThis.__NRQ_VALKEY__ = valkey;
};
