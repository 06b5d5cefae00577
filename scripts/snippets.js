// The TypeScript blocks of README.md and docs/*.md, as files of a `nest new` application, and their
// compilation with the tsconfig that application has (compat/nest11, compat/nest12: the templates'
// own). A reader copies these blocks into such an application, whose `isolatedModules` and
// `emitDecoratorMetadata` refuse code a laxer tsconfig accepts, so that is the tsconfig they are held to.
//
// A block is ```ts, optionally with attributes after the language (`node scripts/snippets.js` checks them):
//   file=src/app.module.ts   the file it is in the application (other blocks may import it); blocks
//                            without one become src/<page>-<line>.ts
//   only=nest11 | only=nest12   a block for one major (a jest test, a vitest test)
'use strict';

const path = require('node:path');
const ts = require('typescript');
const { root, pages, read, codeBlocks } = require('./docs');

const FLAVORS = ['nest11', 'nest12'];

/** The TypeScript blocks of the given pages that an application of `flavor` has, as files. */
function snippets(flavor, from = pages()) {
  const files = new Map();
  for (const page of from) {
    for (const block of codeBlocks(read(page))) {
      if (block.lang !== 'ts' && block.lang !== 'typescript') continue;
      if (block.attributes.only && !FLAVORS.includes(block.attributes.only))
        throw new Error(`${page}:${block.line}: only=${block.attributes.only} is not one of ${FLAVORS.join(', ')}`);
      if (block.attributes.only && block.attributes.only !== flavor) continue;
      const file = block.attributes.file ?? `src/${page.replace(/\.md$/, '').replace(/\W+/g, '-')}-${block.line}.ts`;
      if (!/^src\/[\w./-]+\.ts$/.test(file))
        throw new Error(`${page}:${block.line}: file=${file} is not a src/*.ts path`);
      if (files.has(file)) {
        const other = files.get(file);
        throw new Error(`${page}:${block.line} and ${other.page}:${other.line} are both ${file} for ${flavor}`);
      }
      files.set(file, { file, page, line: block.line, code: block.code });
    }
  }
  return [...files.values()];
}

// Packages a block may use that the repository does not install: the compat applications install the
// real ones and compile the blocks there; here they are typed just enough to check the rest.
const SHIMS = {
  '@nestjs/config': `import type { DynamicModule } from '@nestjs/common';
export declare class ConfigService {
  get<T = any>(key: string): T | undefined;
  get<T = any>(key: string, defaultValue: T): T;
  getOrThrow<T = any>(key: string): T;
}
export declare class ConfigModule {
  static forRoot(options?: { isGlobal?: boolean; envFilePath?: string | string[] }): DynamicModule;
}
`,
  vitest: `/// <reference types="jest" />
export declare const describe: jest.Describe;
export declare const it: jest.It;
export declare const test: jest.It;
export declare const expect: jest.Expect;
export declare const beforeEach: jest.Lifecycle;
export declare const afterEach: jest.Lifecycle;
export declare const beforeAll: jest.Lifecycle;
export declare const afterAll: jest.Lifecycle;
export declare const vi: { fn: typeof jest.fn; spyOn: typeof jest.spyOn };
`,
};

/**
 * Compiles the blocks of `flavor` as one application with that major's `nest new` tsconfig, the
 * library from its sources. Returns the errors in the blocks, each as `page:line: message`.
 */
function compileSnippets(flavor, from = pages()) {
  const files = snippets(flavor, from);
  // An application directory that exists only in memory, inside the repository so that packages
  // resolve from its node_modules.
  const app = path.join(root, `.snippets-${flavor}`);
  const virtual = new Map();
  const type = flavor === 'nest12' ? 'module' : 'commonjs';
  virtual.set(path.join(app, 'package.json'), JSON.stringify({ name: `snippets-${flavor}`, private: true, type }));
  const located = new Map();
  for (const snippet of files) {
    const name = path.join(app, snippet.file);
    virtual.set(name, snippet.code);
    located.set(name, snippet);
  }
  const paths = {
    'nestjs-redis-queues': [path.join(root, 'libs', 'queue', 'src', 'index.ts')],
    'nestjs-redis-queues/testing': [path.join(root, 'libs', 'queue', 'src', 'testing', 'index.ts')],
  };
  for (const [pkg, declarations] of Object.entries(SHIMS)) {
    const name = path.join(app, 'shims', `${pkg.replace(/\W+/g, '-')}.d.ts`);
    virtual.set(name, declarations);
    paths[pkg] = [name];
  }

  const tsconfig = ts.readConfigFile(path.join(root, 'compat', flavor, 'tsconfig.json'), ts.sys.readFile);
  if (tsconfig.error) throw new Error(ts.flattenDiagnosticMessageText(tsconfig.error.messageText, '\n'));
  const parsed = ts.parseJsonConfigFileContent(tsconfig.config, ts.sys, app);
  const options = {
    ...parsed.options,
    noEmit: true,
    incremental: false,
    declaration: false,
    rootDir: undefined,
    paths,
    // vitest/globals is what the Nest 12 template names; vitest's own types come from the shim here.
    types: parsed.options.types?.map((name) => (name === 'vitest/globals' ? 'jest' : name)),
  };

  const host = ts.createCompilerHost(options, true);
  const fileExists = host.fileExists.bind(host);
  const readFile = host.readFile.bind(host);
  const getSourceFile = host.getSourceFile.bind(host);
  const directoryExists = host.directoryExists?.bind(host);
  host.directoryExists = (name) => {
    const resolved = path.resolve(name);
    return resolved === app || resolved.startsWith(app + path.sep) || (directoryExists ? directoryExists(name) : true);
  };
  host.realpath = (name) => name;
  host.fileExists = (name) => virtual.has(path.resolve(name)) || fileExists(name);
  host.readFile = (name) => virtual.get(path.resolve(name)) ?? readFile(name);
  host.getSourceFile = (name, languageVersion, onError, shouldCreate) => {
    const text = virtual.get(path.resolve(name));
    if (text === undefined) return getSourceFile(name, languageVersion, onError, shouldCreate);
    return ts.createSourceFile(name, text, languageVersion, true);
  };

  const program = ts.createProgram(
    files.map((snippet) => path.join(app, snippet.file)),
    options,
    host,
  );
  // The blocks' own diagnostics and those of no file: checking every file of the program (the library's
  // sources among them) would cost most of the time for errors nobody reads here (tsc checks those).
  const blocks = program.getSourceFiles().filter((file) => located.has(path.resolve(file.fileName)));
  const diagnostics = [
    ...program.getConfigFileParsingDiagnostics(),
    ...program.getOptionsDiagnostics(),
    ...program.getGlobalDiagnostics(),
    ...blocks.flatMap((file) => [...program.getSyntacticDiagnostics(file), ...program.getSemanticDiagnostics(file)]),
  ];
  return diagnostics
    .filter((diagnostic) => !diagnostic.file || located.has(path.resolve(diagnostic.file.fileName)))
    .map((diagnostic) => {
      const message = ts.flattenDiagnosticMessageText(diagnostic.messageText, '\n');
      if (!diagnostic.file) return `TS${diagnostic.code}: ${message}`;
      const snippet = located.get(path.resolve(diagnostic.file.fileName));
      const { line } = diagnostic.file.getLineAndCharacterOfPosition(diagnostic.start ?? 0);
      return `${snippet.page}:${snippet.line + 1 + line} (${snippet.file}): TS${diagnostic.code}: ${message}`;
    });
}

module.exports = { FLAVORS, snippets, compileSnippets, SHIMS };

// `node scripts/snippets.js` compiles the blocks of both majors and lists what does not compile.
if (require.main === module) {
  let failed = false;
  for (const flavor of FLAVORS) {
    const errors = compileSnippets(flavor);
    console.log(`${flavor}: ${snippets(flavor).length} blocks, ${errors.length} errors`);
    for (const error of errors) console.log(`  ${error}`);
    failed ||= errors.length > 0;
  }
  process.exit(failed ? 1 : 0);
}
