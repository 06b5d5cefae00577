// `npm run test:browser`: the dashboard in a real browser (Debian's chromium through playwright-core),
// kept out of `npm test` because it needs a browser installed.
/** @type {import('jest').Config} */
module.exports = {
  testEnvironment: '<rootDir>/test/setup/environment.js',
  roots: ['<rootDir>/test/browser'],
  testRegex: '\\.browser-spec\\.ts$',
  transform: { '^.+\\.ts$': ['ts-jest', { tsconfig: '<rootDir>/tsconfig.json' }] },
  moduleNameMapper: {
    '^nestjs-redis-queues$': '<rootDir>/libs/queue/src',
    '^@test/support/(.*)$': '<rootDir>/test/support/$1',
  },
  globalSetup: '<rootDir>/test/setup/global-setup.js',
  globalTeardown: '<rootDir>/test/setup/global-teardown.js',
  testTimeout: 90_000,
};
