// Jest globalSetup of the "cluster" project: unless NRQ_TEST_CLUSTER names a cluster's nodes
// (host:port,...), start a local one (3 masters, 3 replicas). Jest runs it only when a test of that
// project is selected, so single-file runs of other suites do not pay for it.
'use strict';

const { startCluster } = require('../../scripts/cluster');

module.exports = async function clusterSetup() {
  if (process.env.NRQ_TEST_CLUSTER) return;
  const cluster = await startCluster();
  process.env.NRQ_TEST_CLUSTER = cluster.masters.map(({ host, port }) => `${host}:${port}`).join(',');
  globalThis.__NRQ_CLUSTER__ = cluster;
};
