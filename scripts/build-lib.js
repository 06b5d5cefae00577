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
// where the library's script registry says each set of them is, each with its includes inlined by the
// library's own loader (so the package needs no includes and runs exactly the text the tests ran).
const { loadScript } = require(path.join(dist, 'redis', 'lua-loader.js'));
const { SCRIPT_SETS } = require(path.join(dist, 'redis', 'script-registry.js'));
const includes = path.join(lib, 'src', 'redis', 'lua', 'includes');
for (const { dir, protocols } of SCRIPT_SETS) {
  const from = path.join(lib, 'src', path.relative(dist, dir));
  for (const { script } of protocols) {
    fs.writeFileSync(path.join(dir, `${script}.lua`), loadScript(from, script, includes));
  }
}
