// tsc emits only JavaScript; the Lua scripts are read from disk at run time, so they ship beside it.
const fs = require('node:fs');
const path = require('node:path');

const from = path.join(__dirname, '..', 'libs', 'queue', 'src', 'redis', 'lua');
const to = path.join(__dirname, '..', 'libs', 'queue', 'dist', 'redis', 'lua');
fs.mkdirSync(to, { recursive: true });
for (const file of fs.readdirSync(from).filter((f) => f.endsWith('.lua'))) {
  fs.copyFileSync(path.join(from, file), path.join(to, file));
}
