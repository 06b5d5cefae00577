const shared = {
  testEnvironment: 'node',
  transform: { '^.+\\.ts$': ['ts-jest', { tsconfig: '<rootDir>/tsconfig.json' }] },
  moduleNameMapper: { '^nestjs-redis-queues$': '<rootDir>/libs/queue/src' },
};

// The behaviour suites of both queues run twice: on one redis-server, and on a local Redis Cluster.
const ON_BOTH = [
  'fixed-queue',
  'fixed-delivery',
  'delay-queue',
  'obliterate',
  'pause',
  'recurring',
  'recurring-decorator',
];
const CLUSTER_ONLY = ['cluster'];

/** @type {import('jest').Config} */
module.exports = {
  testTimeout: 60_000,
  maxWorkers: 2,
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
  ],
};
