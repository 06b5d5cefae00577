import { mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join, relative } from 'node:path';
import * as ts from 'typescript';

const source = join(__dirname, '../../libs/queue/src');

/** The files under `dir` whose names end with `suffix` (not specs). */
function sources(dir: string, suffix: string): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((entry) => {
    const path = join(dir, entry.name);
    if (entry.isDirectory()) return sources(path, suffix);
    return entry.name.endsWith(suffix) && !entry.name.endsWith('.spec.ts') ? [path] : [];
  });
}

/** Rewrites one source file's text (`file` relative to libs/queue/src) on its way into a private build. */
export type SourcePatch = (file: string, text: string) => string;

/**
 * Compiles the library into a private directory, for child processes (plain Node, no test runner)
 * that must run the code under test. Transpile-only and private: fast, needs no type-check of the
 * whole tree, and never races a build writing libs/queue/dist. Children resolve its dependencies
 * through NODE_PATH (see `libraryEnv`). `patch` builds a deliberately broken library, for tests that
 * prove a suite notices the break.
 */
export function compileLibrary(patch: SourcePatch = (_file, text) => text): { dir: string; remove(): void } {
  // dist/ beside a package.json, as in the package: the library reads its version from there.
  const root = mkdtempSync(join(tmpdir(), 'nrq-lib-'));
  const dir = join(root, 'dist');
  mkdirSync(dir);
  writeFileSync(join(root, 'package.json'), readFileSync(join(source, '..', 'package.json')));
  const compilerOptions: ts.CompilerOptions = {
    module: ts.ModuleKind.CommonJS,
    target: ts.ScriptTarget.ES2022,
    experimentalDecorators: true,
    emitDecoratorMetadata: true,
    esModuleInterop: true,
  };
  for (const file of sources(source, '.ts')) {
    const out = join(dir, relative(source, file)).replace(/\.ts$/, '.js');
    mkdirSync(dirname(out), { recursive: true });
    const text = patch(relative(source, file), readFileSync(file, 'utf8'));
    writeFileSync(out, ts.transpileModule(text, { compilerOptions, fileName: file }).outputText);
  }
  // Scripts and includes as they are: the library inlines the includes as it loads a script.
  for (const file of sources(source, '.lua')) {
    const out = join(dir, relative(source, file));
    mkdirSync(dirname(out), { recursive: true });
    writeFileSync(out, patch(relative(source, file), readFileSync(file, 'utf8')));
  }
  return { dir, remove: () => rmSync(root, { recursive: true, force: true }) };
}

/** Environment for a child process that requires the compiled library from `dir`. */
export function libraryEnv(dir: string): NodeJS.ProcessEnv {
  return { ...process.env, NRQ_LIB: dir, NODE_PATH: join(__dirname, '../../node_modules') };
}
