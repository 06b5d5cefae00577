#!/usr/bin/env node
// Builds the library into libs/queue/dist from scratch: a file whose source was deleted or renamed
// must not linger there and end up in the published package.
'use strict';

const { spawnSync } = require('node:child_process');
const fs = require('node:fs');
const path = require('node:path');

const lib = path.join(__dirname, '..', 'libs', 'queue');
const dist = path.join(lib, 'dist');

fs.rmSync(dist, { recursive: true, force: true });
const tsc = spawnSync(
  process.execPath,
  [require.resolve('typescript/bin/tsc'), '-p', path.join(lib, 'tsconfig.lib.json')],
  {
    stdio: 'inherit',
  },
);
if (tsc.status !== 0) process.exit(tsc.status ?? 1);

// tsc emits only JavaScript; the Lua scripts are read from disk at run time, so they ship beside it,
// each with its includes inlined by the library's own loader (so the package needs no includes and
// runs exactly the text the tests ran).
const { loadScript } = require(path.join(dist, 'redis', 'lua-loader.js'));
const from = path.join(lib, 'src', 'redis', 'lua');
const to = path.join(dist, 'redis', 'lua');
fs.mkdirSync(to, { recursive: true });
for (const file of fs.readdirSync(from).filter((f) => f.endsWith('.lua'))) {
  fs.writeFileSync(path.join(to, file), loadScript(from, path.basename(file, '.lua')));
}
