#!/usr/bin/env node
// npm run simulate -- [--seconds N] [--seed S] [--cast ...] [--profile]: the deterministic simulation
// (sim/), run on the library's sources as they are now (compiled on load, never a stale build).
// --profile writes a CPU profile of the run to test-artifacts/profiles (open it in Chrome's DevTools).
'use strict';

const { spawnSync } = require('node:child_process');
const path = require('node:path');

const root = process.env.SIM_ROOT || path.join(__dirname, '..');
const args = process.argv.slice(2);
const profile = args.includes('--profile')
  ? ['--cpu-prof', `--cpu-prof-dir=${path.join(root, 'test-artifacts', 'profiles')}`]
  : [];
const run = spawnSync(
  process.execPath,
  [
    ...profile,
    '-r',
    path.join(root, 'sim', 'register.js'),
    path.join(root, 'sim', 'main.ts'),
    ...args.filter((arg) => arg !== '--profile'),
  ],
  { stdio: 'inherit' },
);
process.exit(run.status ?? 1);
