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
// A script is known once its protocol is defined: every protocol file (`<folder>/lua/*.js`) is loaded.
const { loadScript } = require(path.join(dist, 'redis', 'lua-loader.js'));
const { scriptSets, SHARED_INCLUDES } = require(path.join(dist, 'redis', 'script-registry.js'));
for (const folder of fs.readdirSync(dist)) {
  const lua = path.join(dist, folder, 'lua');
  if (!fs.existsSync(lua)) continue;
  for (const file of fs.readdirSync(lua)) if (file.endsWith('.js')) require(path.join(lua, file));
}
const source = (dir) => path.join(lib, 'src', path.relative(dist, dir));
for (const { dir, includes, scripts } of scriptSets()) {
  const from = [...includes, SHARED_INCLUDES].map(source);
  for (const script of scripts)
    fs.writeFileSync(path.join(dir, `${script}.lua`), loadScript(source(dir), script, from));
}
