#!/usr/bin/env node
// npm run simulate -- [--seconds N] [--seed S] [--cast ...]: the deterministic simulation (sim/), run on
// the library's sources as they are now (compiled on load, never a stale build).
'use strict';

const { spawnSync } = require('node:child_process');
const path = require('node:path');

const root = process.env.SIM_ROOT || path.join(__dirname, '..');
const run = spawnSync(
  process.execPath,
  ['-r', path.join(root, 'sim', 'register.js'), path.join(root, 'sim', 'main.ts'), ...process.argv.slice(2)],
  { stdio: 'inherit' },
);
process.exit(run.status ?? 1);
