#!/usr/bin/env node
// npm run simulate:mutants: each defect the library once had, re-introduced as a patch (sim/mutants/*.patch)
// on a copy of the sources (never the working tree), must be found by the simulation within 60 s.
// Each mutant explores the same seeds from the same first one, so a run's times can be compared; the
// seed that finds one is replayed on the unpatched sources, which must keep every promise.
'use strict';

const { spawnSync } = require('node:child_process');
const fs = require('node:fs');
const path = require('node:path');

const root = path.join(__dirname, '..');
const BUDGET_S = Number(process.env.MUTANT_SECONDS || 60);
const FIRST_SEED = process.env.MUTANT_FIRST_SEED || '1';
const only = process.argv.slice(2);

const mutants = fs
  .readdirSync(path.join(root, 'sim', 'mutants'))
  .filter((file) => file.endsWith('.patch'))
  .map((file) => file.slice(0, -'.patch'.length))
  .filter((name) => only.length === 0 || only.includes(name));

const results = [];
for (const name of mutants) {
  // Inside the repository, so that the copy finds its node_modules; test-artifacts/ is not tracked.
  const relative = path.join('test-artifacts', 'mutants', name);
  const copy = path.join(root, relative);
  fs.rmSync(copy, { recursive: true, force: true });
  fs.mkdirSync(path.join(copy, 'libs', 'queue'), { recursive: true });
  fs.cpSync(path.join(root, 'libs', 'queue', 'src'), path.join(copy, 'libs', 'queue', 'src'), { recursive: true });
  fs.cpSync(path.join(root, 'sim'), path.join(copy, 'sim'), { recursive: true });
  const patch = path.join(root, 'sim', 'mutants', `${name}.patch`);
  const applied = spawnSync('git', ['apply', `--directory=${relative}`, patch], { cwd: root, encoding: 'utf8' });
  if (applied.status !== 0) {
    results.push({ name, found: false, detail: `patch does not apply: ${applied.stderr.trim()}` });
    continue;
  }
  const started = Date.now();
  const run = spawnSync(
    process.execPath,
    [
      '-r',
      path.join(copy, 'sim', 'register.js'),
      path.join(copy, 'sim', 'main.ts'),
      '--seconds',
      String(BUDGET_S),
      '--first',
      FIRST_SEED,
      '--no-shrink',
    ],
    { cwd: root, encoding: 'utf8', maxBuffer: 64 * 1024 * 1024 },
  );
  const wallS = (Date.now() - started) / 1000;
  const broke = /seed (\d+) broke (\S+) after (\d+) seeds, ([\d.]+) s/.exec(run.stdout);
  const replay = /replay: npm run simulate -- (--seed \d+ --cast \S+)/.exec(run.stdout);
  if (broke && run.status === 1 && replay) {
    // Found only if the same seed and cast keep every promise without the patch: a broken invariant that
    // the unpatched tree breaks too is the model's false alarm, not the mutant found.
    const clean = spawnSync(
      process.execPath,
      ['-r', path.join(root, 'sim', 'register.js'), path.join(root, 'sim', 'main.ts'), ...replay[1].split(' ')],
      { cwd: root, encoding: 'utf8', maxBuffer: 64 * 1024 * 1024 },
    );
    results.push(
      clean.status === 0
        ? { name, found: true, detail: `seed ${broke[1]} broke ${broke[2]} after ${broke[3]} seeds, ${broke[4]} s` }
        : { name, found: false, detail: `seed ${broke[1]} broke ${broke[2]}, but so does the unpatched tree` },
    );
  } else {
    results.push({
      name,
      found: false,
      detail: `not found in ${wallS.toFixed(0)} s (exit ${run.status}) ${run.stderr.slice(-500)}`,
    });
  }
  console.log(`${results.at(-1).found ? 'found ' : 'MISSED'} ${name}: ${results.at(-1).detail}`);
  fs.rmSync(copy, { recursive: true, force: true });
}
const missed = results.filter((result) => !result.found);
console.log(`${results.length - missed.length} of ${results.length} mutants found within ${BUDGET_S} s each`);
process.exit(missed.length === 0 ? 0 : 1);
