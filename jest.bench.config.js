// `npm run bench:smoke`: the benchmark suite at a tiny scale, kept out of `npm test` because it checks the
// benchmark harness (every scenario runs and yields finite figures), not the library, and was the longest
// suite of `npm test` but the simulation: about a minute of one of its workers on 2 cores.
const shared = require('./test/setup/jest-shared');

/** @type {import('jest').Config} */
module.exports = {
  ...shared,
  roots: ['<rootDir>/test/bench'],
  testRegex: '\\.bench-spec\\.ts$',
  testTimeout: 120_000,
};
