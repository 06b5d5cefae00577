// `npm run test:browser`: the dashboard in a real browser (Debian's chromium through playwright-core),
// kept out of `npm test` because it needs a browser installed.
const shared = require('./test/setup/jest-shared');

/** @type {import('jest').Config} */
module.exports = {
  ...shared,
  roots: ['<rootDir>/test/browser'],
  testRegex: '\\.browser-spec\\.ts$',
  globalSetup: '<rootDir>/test/setup/global-setup.js',
  globalTeardown: '<rootDir>/test/setup/global-teardown.js',
  testTimeout: 90_000,
};
