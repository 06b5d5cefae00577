const shared = require('./test/setup/jest-shared');

// The behaviour suites of both queues run on one redis-server, on a local Redis Cluster, and on Valkey.
const ON_BOTH = [
  'fixed-queue/fixed-queue',
  'fixed-queue/fixed-queue-groups',
  'fixed-queue/fixed-delivery',
  'delay-queue/delay-queue',
  'delay-queue/task-source',
  'module/obliterate',
  'module/pause',
  'recurring/recurring',
  'recurring/recurring-decorator',
];
const CLUSTER_ONLY = ['redis/cluster'];
// Valkey 8 (Debian's backports) runs the suites of both queues, delivery order and recurring tasks.
const ON_VALKEY = [
  'redis/server',
  'fixed-queue/fixed-queue',
  'fixed-queue/fixed-queue-groups',
  'fixed-queue/fixed-delivery',
  'delay-queue/delay-queue',
  'delay-queue/task-source',
  'recurring/recurring',
  'recurring/recurring-decorator',
];

// The in-process memory engine (connection: 'memory://') runs the queue suites too: the library's own
// Lua scripts on Lua 5.1 in WebAssembly, no server. Its clock stands still until a test moves it: a wait
// written with `afterTime` (test/support/testing.ts) moves the clock there, and polls as before on a
// server; a suite that still waits for real time names `@memory-clock system` (test/setup/on-memory.js).
// QueueClock.advance has suites of its own (queue-clock, and the engine's unit specs). Left out: what only a server has (faults/: killed, frozen
// or restarted servers, TLS, ACLs; maxmemory, SLOWLOG, replication, the cluster and server suites).
// A load test whose size only measures speed is smaller there (`onMemory` in test/support/testing.ts).
const ON_MEMORY = [...ON_BOTH];

/** @type {import('jest').Config} */
module.exports = {
  testTimeout: 60_000,
  // More workers than the 2 cores CI has: about half of the suites' time is spent waiting on real time
  // (servers restarted, leases and timers run out, processes started), which the other suites' work
  // fills. Measured on 2 cores: 2 workers 501 s, 3 workers 371 s, 4 workers 316 s, every test passing.
  maxWorkers: 4,
  // The slowest suites first on a clone without Jest's cache of durations too (see the file).
  testSequencer: '<rootDir>/test/setup/sequencer.js',
  projects: [
    {
      ...shared,
      displayName: 'redis',
      roots: ['<rootDir>/libs', '<rootDir>/apps', '<rootDir>/test', '<rootDir>/bench'],
      testRegex: '\\.(spec|e2e-spec)\\.ts$',
      testPathIgnorePatterns: ['/node_modules/', ...CLUSTER_ONLY.map((name) => `/test/${name}\\.e2e-spec\\.ts$`)],
      globalSetup: '<rootDir>/test/setup/global-setup.js',
      globalTeardown: '<rootDir>/test/setup/global-teardown.js',
    },
    {
      ...shared,
      displayName: 'cluster',
      roots: ['<rootDir>/test'],
      testMatch: [...ON_BOTH, ...CLUSTER_ONLY].map((name) => `<rootDir>/test/${name}.e2e-spec.ts`),
      globalSetup: '<rootDir>/test/setup/cluster-setup.js',
      globalTeardown: '<rootDir>/test/setup/cluster-teardown.js',
      setupFiles: ['<rootDir>/test/setup/on-cluster.js'],
    },
    {
      ...shared,
      displayName: 'valkey',
      roots: ['<rootDir>/test'],
      testMatch: ON_VALKEY.map((name) => `<rootDir>/test/${name}.e2e-spec.ts`),
      globalSetup: '<rootDir>/test/setup/valkey-setup.js',
      globalTeardown: '<rootDir>/test/setup/valkey-teardown.js',
      setupFiles: ['<rootDir>/test/setup/on-valkey.js'],
    },
    {
      ...shared,
      displayName: 'memory',
      roots: ['<rootDir>/test'],
      testMatch: ON_MEMORY.map((name) => `<rootDir>/test/${name}.e2e-spec.ts`),
      setupFiles: ['<rootDir>/test/setup/on-memory.js'],
    },
  ],
};
