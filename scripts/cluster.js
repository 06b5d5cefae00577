#!/usr/bin/env node
// Starts a throw-away Redis Cluster on loopback from the stock redis-server and redis-cli binaries.
'use strict';

const { execFile } = require('node:child_process');
const { setTimeout: sleep } = require('node:timers/promises');
const {
  ensureRedisCli,
  ensureRedisServer,
  freePort,
  redisCommand,
  serveUntilSignalled,
  startRedis,
} = require('./redis');

const HOST = '127.0.0.1';
const READY_TIMEOUT_MS = 30_000;
const MAX_PORT = 65535;
const BUS_PORT_OFFSET = 10_000; // a node's cluster bus listens on its port + 10000

const isFree = (port) =>
  freePort(port).then(
    () => true,
    () => false,
  );

/** Picks `count` ports whose cluster bus ports (port + 10000) are free too. */
async function pickClusterPorts(count) {
  const ports = [];
  const taken = new Set();
  while (ports.length < count) {
    const port = await freePort();
    const bus = port + BUS_PORT_OFFSET;
    if (bus > MAX_PORT || taken.has(port) || taken.has(bus) || !(await isFree(bus))) continue;
    ports.push(port);
    taken.add(port).add(bus);
  }
  return ports;
}

function redisCli(cli, args, timeoutMs) {
  return new Promise((resolve, reject) => {
    execFile(cli, args, { timeout: timeoutMs }, (err, stdout, stderr) => {
      if (err) reject(new Error(`redis-cli ${args.join(' ')} failed: ${err.message}\n${stdout}${stderr}`.trim()));
      else resolve(stdout);
    });
  });
}

// `cluster_state:ok` alone comes before the replicas have taken their roles everywhere, so also
// wait until every node sees the full topology and each replica's link to its master is up
// (a replica that never synced may refuse to fail over).
async function waitForCluster(servers, masters, replicas, deadline) {
  const settled = async ({ port }) => {
    const [info, nodes, replication] = await Promise.all(
      [
        ['CLUSTER', 'INFO'],
        ['CLUSTER', 'NODES'],
        ['INFO', 'replication'],
      ].map((args) => redisCommand(port, args)),
    );
    const flags = nodes
      .split('\n')
      .filter(Boolean)
      .map((line) => line.split(' ')[2]);
    return (
      info.includes('cluster_state:ok') &&
      flags.filter((f) => /\bmaster\b/.test(f)).length === masters &&
      flags.filter((f) => /\bslave\b/.test(f)).length === replicas &&
      (/^role:master\r?$/m.test(replication) || /^master_link_status:up\r?$/m.test(replication))
    );
  };
  while (!(await Promise.all(servers.map((server) => settled(server).catch(() => false)))).every(Boolean)) {
    if (Date.now() > deadline)
      throw new Error(
        `cluster did not settle (cluster_state:ok, replicas in sync) within ${READY_TIMEOUT_MS / 1000} s`,
      );
    await sleep(100);
  }
}

/**
 * @returns {Promise<{nodes: {host: string, port: number}[], masters: {host: string, port: number}[],
 *   stop(): Promise<void>, kill(port: number): Promise<void>}>}
 */
async function startCluster({ masters = 3, replicasPerMaster = 1, basePort } = {}) {
  if (masters < 3) throw new Error('a Redis Cluster needs at least 3 masters');
  ensureRedisServer();
  const cli = ensureRedisCli();
  const count = masters * (1 + replicasPerMaster);
  const ports = basePort ? Array.from({ length: count }, (_, i) => basePort + i) : await pickClusterPorts(count);
  const extraArgs = [
    '--cluster-enabled',
    'yes',
    '--cluster-config-file',
    'nodes.conf',
    '--cluster-node-timeout',
    '2000',
  ];

  const started = await Promise.allSettled(ports.map((port) => startRedis({ port, extraArgs })));
  const servers = started.filter((r) => r.status === 'fulfilled').map((r) => r.value);
  const stop = async () => {
    await Promise.all(servers.map((server) => server.stop()));
  };

  try {
    const failed = started.find((r) => r.status === 'rejected');
    if (failed) throw failed.reason;
    const deadline = Date.now() + READY_TIMEOUT_MS;
    await redisCli(
      cli,
      [
        '--cluster',
        'create',
        ...ports.map((port) => `${HOST}:${port}`),
        '--cluster-replicas',
        String(replicasPerMaster),
        '--cluster-yes',
      ],
      READY_TIMEOUT_MS,
    );
    await waitForCluster(servers, masters, count - masters, deadline);

    const roles = await Promise.all(servers.map(({ port }) => redisCommand(port, ['INFO', 'replication'])));
    const nodes = servers.map(({ port }) => ({ host: HOST, port }));
    return {
      nodes,
      masters: nodes.filter((_, i) => /^role:master\r?$/m.test(roles[i])),
      stop,
      /** SIGKILLs one node (to test failover); resolves once it is gone. */
      async kill(port) {
        const server = servers.find((s) => s.port === port);
        if (!server) throw new Error(`no cluster node on port ${port}`);
        await server.kill('SIGKILL');
      },
    };
  } catch (err) {
    await stop();
    throw err;
  }
}

module.exports = { startCluster };

if (require.main === module) {
  serveUntilSignalled(
    () => startCluster(),
    (cluster) => `REDIS_CLUSTER=${cluster.nodes.map(({ host, port }) => `${host}:${port}`).join(',')}`,
    'cluster',
  );
}
