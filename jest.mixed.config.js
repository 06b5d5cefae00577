// `npm run test:mixed` (scripts/mixed.js): processes of the previous release beside processes of this
// tree on one private redis-server. Its scenarios start many processes each, so the suites run one at
// a time.
const { projects } = require('./jest.config');

const redis = projects.find((project) => project.displayName === 'redis');

/** @type {import('jest').Config} */
module.exports = {
  testTimeout: 120_000,
  maxWorkers: 1,
  projects: [
    {
      transform: redis.transform,
      moduleNameMapper: redis.moduleNameMapper,
      testEnvironment: 'node',
      displayName: 'mixed',
      roots: ['<rootDir>/test/mixed'],
      testRegex: '\\.mixed-spec\\.ts$',
      globalSetup: redis.globalSetup,
      globalTeardown: redis.globalTeardown,
    },
  ],
};
