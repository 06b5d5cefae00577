#!/usr/bin/env node
// Usage: npm run test:one -- [--memory | --cluster | --valkey] <test file or pattern>... [jest options]
// Runs the files named on one backend: a private redis-server by default (the `redis` Jest project),
// which starts in a fraction of a second; `--memory`, `--cluster` or `--valkey` pick that project
// instead. Only the chosen project's global setup runs, so no Cluster or Valkey starts unasked. No
// type-check: `npm test` does that. Jest is given the paths before `--selectProjects`, where they are
// read as paths, not as more project names.
'use strict';

const { spawn } = require('node:child_process');
const path = require('node:path');

const PROJECTS = { '--memory': 'memory', '--cluster': 'cluster', '--valkey': 'valkey' };

const args = process.argv.slice(2);
const chosen = args.filter((arg) => arg in PROJECTS);
const rest = args.filter((arg) => !(arg in PROJECTS));
if (chosen.length > 1 || !rest.some((arg) => !arg.startsWith('-'))) {
  console.error(
    'usage: npm run test:one -- [--memory | --cluster | --valkey] <test file or pattern>... [jest options]',
  );
  process.exit(2);
}
const project = chosen.length ? PROJECTS[chosen[0]] : 'redis';

const jestBin = path.join(__dirname, '..', 'node_modules', 'jest', 'bin', 'jest.js');
// --experimental-vm-modules: the demo's PGlite loads Node modules with import() (docs/development.md).
const child = spawn(process.execPath, ['--experimental-vm-modules', jestBin, ...rest, '--selectProjects', project], {
  stdio: 'inherit',
});
for (const signal of ['SIGINT', 'SIGTERM']) process.on(signal, () => child.kill(signal));
child.on('exit', (code, signal) => process.exit(signal ? 1 : (code ?? 1)));
