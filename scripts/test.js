#!/usr/bin/env node
// `npm test`: the type-check and Jest side by side, arguments passed to Jest. Jest transpiles each file
// alone without type-checking it, so tsc is what finds a type error; run first, it kept both cores for
// itself for about 20 s while the suites, half of whose time is spent waiting on real time (restarts,
// leases, processes), could have run. Its report is printed as soon as it ends; the run fails if
// either does.
'use strict';

const { spawn } = require('node:child_process');
const path = require('node:path');

const root = path.join(__dirname, '..');
const bin = (name) => path.join(root, 'node_modules', name);

function run(args, stdio) {
  const child = spawn(process.execPath, args, { cwd: root, stdio });
  let output = '';
  if (stdio === 'pipe') {
    child.stdout.on('data', (chunk) => (output += chunk));
    child.stderr.on('data', (chunk) => (output += chunk));
  }
  return new Promise((resolve) => {
    child.on('error', (error) => resolve({ code: 1, output: `${error.message}\n` }));
    child.on('close', (code, signal) => resolve({ code: code ?? (signal ? 1 : 0), output }));
  });
}

async function main() {
  const typecheck = run([bin('typescript/bin/tsc'), '-p', 'tsconfig.json', '--noEmit'], 'pipe').then((result) => {
    if (result.code !== 0) process.stderr.write(`\nThe type-check (tsc -p tsconfig.json) failed:\n${result.output}\n`);
    return result;
  });
  const jest = run(['--experimental-vm-modules', bin('jest/bin/jest.js'), ...process.argv.slice(2)], 'inherit');
  const [types, tests] = await Promise.all([typecheck, jest]);
  if (types.code !== 0) process.stderr.write('The type-check failed (its errors are printed above).\n');
  process.exit(types.code !== 0 || tests.code !== 0 ? 1 : 0);
}

void main();
