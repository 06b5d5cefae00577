// Runs the simulator's TypeScript and the library's sources as they are, compiled on load (no build
// step to go stale): a change to a .ts or .lua file of the library is what the next run explores.
'use strict';

const fs = require('node:fs');
const ts = require('typescript');

const options = {
  module: ts.ModuleKind.CommonJS,
  target: ts.ScriptTarget.ES2022,
  esModuleInterop: true,
  experimentalDecorators: true,
  emitDecoratorMetadata: true,
  sourceMap: false,
};

require.extensions['.ts'] = (module, filename) => {
  const source = fs.readFileSync(filename, 'utf8');
  const { outputText } = ts.transpileModule(source, { compilerOptions: options, fileName: filename });
  module._compile(outputText, filename);
};
