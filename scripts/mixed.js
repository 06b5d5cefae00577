#!/usr/bin/env node
// Usage: npm run test:mixed [-- jest options]
// Unpacks the previous release's tarball (compat/releases, kept in the repository, so no network is
// needed) into a private directory and runs test/mixed on it: its processes resolve their
// dependencies from this repository's node_modules, like the current build's. NRQ_PREVIOUS_LIB tells
// the suites where it is, NRQ_PREVIOUS_VERSION which release it is.
'use strict';

const { spawn } = require('node:child_process');
const path = require('node:path');
const { current, unpackPrevious } = require('./releases');

const root = path.join(__dirname, '..');
const previous = unpackPrevious();
console.error(`test:mixed: ${previous.version} (${previous.tarball}) beside this tree (${current})`);

const jestBin = path.join(root, 'node_modules', 'jest', 'bin', 'jest.js');
const child = spawn(process.execPath, [jestBin, '-c', 'jest.mixed.config.js', ...process.argv.slice(2)], {
  cwd: root,
  stdio: 'inherit',
  env: { ...process.env, NRQ_PREVIOUS_LIB: previous.package, NRQ_PREVIOUS_VERSION: previous.version },
});
for (const signal of ['SIGINT', 'SIGTERM']) process.on(signal, () => child.kill(signal));
child.on('exit', (code, signal) => {
  previous.remove();
  process.exit(signal ? 1 : (code ?? 1));
});
