// Runs the simulator's TypeScript and the library's sources as they are, compiled on load (no build
// step to go stale): a change to a .ts or .lua file of the library is what the next run explores.
// Each file's output is kept by the hash of its text (and of the compiler's version and options), so
// that a run spends its time exploring rather than compiling what the last run compiled already.
'use strict';

const { createHash } = require('node:crypto');
const fs = require('node:fs');
const path = require('node:path');

const settings = {
  module: 'CommonJS',
  target: 'ES2022',
  esModuleInterop: true,
  experimentalDecorators: true,
  emitDecoratorMetadata: true,
  sourceMap: false,
};

const typescript = require.resolve('typescript/package.json');
const cache = path.join(path.dirname(typescript), '..', '.cache', 'nrq-sim');
const salt = `${require(typescript).version} ${JSON.stringify(settings)}`;

/** The compiler, loaded only when a file is not in the cache (loading it alone takes a good part of a second). */
function transpile(source, filename) {
  const ts = require('typescript');
  const compilerOptions = { ...settings, module: ts.ModuleKind.CommonJS, target: ts.ScriptTarget.ES2022 };
  return ts.transpileModule(source, { compilerOptions, fileName: filename }).outputText;
}

function compiled(source, filename) {
  const key = createHash('sha1').update(salt).update(filename).update(source).digest('hex');
  const file = path.join(cache, `${key}.js`);
  try {
    return fs.readFileSync(file, 'utf8');
  } catch {
    const outputText = transpile(source, filename);
    // Written aside then renamed: two runs at once never read half a file.
    fs.mkdirSync(cache, { recursive: true });
    const partial = `${file}.${process.pid}`;
    fs.writeFileSync(partial, outputText);
    fs.renameSync(partial, file);
    return outputText;
  }
}

require.extensions['.ts'] = (module, filename) => {
  module._compile(compiled(fs.readFileSync(filename, 'utf8'), filename), filename);
};
