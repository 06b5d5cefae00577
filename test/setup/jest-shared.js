// What every Jest configuration of the repository shares (jest.config.js's projects, the browser's and the
// benchmark smoke test's): Node's environment that fails a suite on an unhandled rejection, ts-jest, and
// the package's names mapped to its sources.
'use strict';

module.exports = {
  // Node's, failing a suite on an unhandled promise rejection (a crash outside Jest).
  testEnvironment: '<rootDir>/test/setup/environment.js',
  transform: { '^.+\\.ts$': ['ts-jest', { tsconfig: '<rootDir>/tsconfig.json' }] },
  moduleNameMapper: {
    '^nestjs-redis-queues$': '<rootDir>/libs/queue/src',
    '^nestjs-redis-queues/testing$': '<rootDir>/libs/queue/src/testing',
    '^@test/support/(.*)$': '<rootDir>/test/support/$1',
  },
};
