// `npm run bench:smoke`: the benchmark suite at a tiny scale, kept out of `npm test` because it checks the
// benchmark harness (every scenario runs and yields finite figures), not the library, and was the longest
// suite of `npm test` but the simulation: about a minute of one of its workers on 2 cores.
/** @type {import('jest').Config} */
module.exports = {
  testEnvironment: '<rootDir>/test/setup/environment.js',
  roots: ['<rootDir>/test/bench'],
  testRegex: '\\.bench-spec\\.ts$',
  transform: { '^.+\\.ts$': ['ts-jest', { tsconfig: '<rootDir>/tsconfig.json' }] },
  moduleNameMapper: {
    '^nestjs-redis-queues$': '<rootDir>/libs/queue/src',
    '^nestjs-redis-queues/testing$': '<rootDir>/libs/queue/src/testing',
    '^@test/support/(.*)$': '<rootDir>/test/support/$1',
  },
  testTimeout: 120_000,
};
