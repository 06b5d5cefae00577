// Jest globalTeardown of the "valkey" project: stops the server valkey-setup.js started, if any.
'use strict';

module.exports = async function valkeyTeardown() {
  const valkey = globalThis.__NRQ_VALKEY__;
  if (!valkey) return;
  delete globalThis.__NRQ_VALKEY__;
  delete process.env.NRQ_TEST_VALKEY;
  await valkey.stop();
};
