#!/usr/bin/env node
// Usage: npm run test:mixed [-- jest options]
// Unpacks the previous release's tarball (compat/releases, kept in the repository, so no network is
// needed) into a private directory and runs test/mixed on it: its processes resolve their
// dependencies from this repository's node_modules, like the current build's. NRQ_PREVIOUS_LIB tells
// the suites where it is, NRQ_PREVIOUS_VERSION which release it is.
'use strict';

const { spawn, spawnSync } = require('node:child_process');
const fs = require('node:fs');
const os = require('node:os');
const path = require('node:path');

const root = path.join(__dirname, '..');
const releases = path.join(root, 'compat', 'releases');
const current = require(path.join(root, 'libs', 'queue', 'package.json')).version;

const versionOf = (name) => name.match(/-(\d+\.\d+\.\d+)\.tgz$/)[1];
const compare = (a, b) => {
  const [x, y] = [a, b].map((version) => version.split('.').map(Number));
  return x[0] - y[0] || x[1] - y[1] || x[2] - y[2];
};

/**
 * The newest release not above this tree's version: between releases, the one whose processes share
 * Redis with this tree's during a deploy; while a release is being cut (version raised, not yet
 * packed), the one before it.
 */
function previousRelease() {
  const candidates = fs
    .readdirSync(releases)
    .filter((name) => /^nestjs-redis-queues-\d+\.\d+\.\d+\.tgz$/.test(name))
    .filter((name) => compare(versionOf(name), current) <= 0)
    .sort((a, b) => compare(versionOf(a), versionOf(b)));
  if (!candidates.length) throw new Error(`no release tarball in ${path.relative(root, releases)}`);
  return candidates[candidates.length - 1];
}

const tarball = previousRelease();
const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'nrq-previous-'));
const untar = spawnSync('tar', ['-xzf', path.join(releases, tarball), '-C', dir], { stdio: 'inherit' });
if (untar.status !== 0) process.exit(untar.status ?? 1);
const version = versionOf(tarball);
console.error(`test:mixed: ${version} (${tarball}) beside this tree (${current})`);

const jestBin = path.join(root, 'node_modules', 'jest', 'bin', 'jest.js');
const child = spawn(process.execPath, [jestBin, '-c', 'jest.mixed.config.js', ...process.argv.slice(2)], {
  cwd: root,
  stdio: 'inherit',
  env: { ...process.env, NRQ_PREVIOUS_LIB: path.join(dir, 'package'), NRQ_PREVIOUS_VERSION: version },
});
for (const signal of ['SIGINT', 'SIGTERM']) process.on(signal, () => child.kill(signal));
child.on('exit', (code, signal) => {
  fs.rmSync(dir, { recursive: true, force: true });
  process.exit(signal ? 1 : (code ?? 1));
});
