#!/usr/bin/env node
// Run before tests, the demo and benchmarks: installs npm dependencies when they are missing or
// stale, and makes sure a redis-server binary exists unless REDIS_URL/REDIS_CLUSTER names a server.
'use strict';

const { spawnSync } = require('node:child_process');
const fs = require('node:fs');
const path = require('node:path');
const { ensureRedisServer } = require('./redis');

const root = path.join(__dirname, '..');

function mtime(file) {
  try {
    return fs.statSync(file).mtimeMs;
  } catch {
    return null;
  }
}

// npm writes node_modules/.package-lock.json at the end of every install, so a lockfile newer than
// it means the lockfile changed since node_modules was last brought in line with it.
function dependenciesStale() {
  if (!fs.existsSync(path.join(root, 'node_modules'))) return true;
  const installed = mtime(path.join(root, 'node_modules', '.package-lock.json'));
  const locked = mtime(path.join(root, 'package-lock.json'));
  return installed === null || (locked !== null && locked > installed);
}

// `npm ci`: exactly the locked versions, and never a rewritten lockfile. The lockfile lists every
// platform's optional binaries (.ci/run checks that `npm install` would not add any), which `npm ci`
// requires even of the ones it skips.
function installDependencies() {
  const npm = spawnSync('npm', ['ci', '--no-audit', '--no-fund'], {
    cwd: root,
    stdio: ['ignore', 2, 2], // keep stdout free for whatever runs after us
    env: process.env,
  });
  if (npm.error) throw new Error(`cannot run npm ci: ${npm.error.message}`);
  if (npm.status !== 0)
    throw new Error(`npm ci failed (${npm.signal ? `signal ${npm.signal}` : `exit code ${npm.status}`})`);
}

try {
  if (dependenciesStale()) installDependencies();
  if (!process.env.REDIS_URL && !process.env.REDIS_CLUSTER) ensureRedisServer();
} catch (err) {
  console.error(err.message);
  process.exit(1);
}
