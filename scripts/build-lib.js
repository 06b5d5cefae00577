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
// where the library's script sets say each set of them is, each with its includes inlined by the
// library's own loader (so the package needs no includes and runs exactly the text the tests ran).
// Every set of scripts is what the package's script library (queue-scripts.js) holds.
const { loadScript } = require(path.join(dist, 'redis', 'lua-loader.js'));
const { SHARED_INCLUDES } = require(path.join(dist, 'redis', 'script-library.js'));
const { scriptLibrary } = require(path.join(dist, 'queue-scripts.js'));
const source = (dir) => path.join(lib, 'src', path.relative(dist, dir));
for (const { dir, includes, scripts } of scriptLibrary().sets) {
  const from = [...includes, SHARED_INCLUDES].map(source);
  for (const script of scripts)
    fs.writeFileSync(path.join(dir, `${script}.lua`), loadScript(source(dir), script, from));
}
