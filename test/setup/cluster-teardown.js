// Jest globalTeardown of the "cluster" project: stops the cluster cluster-setup.js started, if any.
'use strict';

module.exports = async function clusterTeardown() {
  const cluster = globalThis.__NRQ_CLUSTER__;
  if (!cluster) return;
  delete globalThis.__NRQ_CLUSTER__;
  delete process.env.NRQ_TEST_CLUSTER;
  await cluster.stop();
};
