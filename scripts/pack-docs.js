#!/usr/bin/env node
// Usage: node scripts/pack-docs.js add|remove
// The package ships the repository's README, LICENSE and CHANGELOG: `add` (prepack) copies them into
// libs/queue, `remove` (postpack) takes them away again, so the repository keeps one copy of each.
'use strict';

const fs = require('node:fs');
const path = require('node:path');

const root = path.join(__dirname, '..');
const lib = path.join(root, 'libs', 'queue');
const DOCS = ['README.md', 'LICENSE', 'CHANGELOG.md'];

const action = process.argv[2];
if (action === 'add') {
  for (const doc of DOCS) fs.copyFileSync(path.join(root, doc), path.join(lib, doc));
} else if (action === 'remove') {
  for (const doc of DOCS) fs.rmSync(path.join(lib, doc), { force: true });
} else {
  console.error('usage: node scripts/pack-docs.js add|remove');
  process.exit(2);
}
