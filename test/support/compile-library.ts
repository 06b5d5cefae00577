import { createHash } from 'node:crypto';
import {
  existsSync,
  mkdirSync,
  mkdtempSync,
  readdirSync,
  readFileSync,
  renameSync,
  rmSync,
  statSync,
  utimesSync,
  writeFileSync,
} from 'node:fs';
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

const compilerOptions: ts.CompilerOptions = {
  module: ts.ModuleKind.CommonJS,
  target: ts.ScriptTarget.ES2022,
  experimentalDecorators: true,
  emitDecoratorMetadata: true,
  esModuleInterop: true,
};

/** Builds a library of the sources, each rewritten by `patch`, in a new directory of `parent`; returns its root. */
function build(parent: string, patch: SourcePatch): string {
  // dist/ beside a package.json, as in the package: the library reads its version from there.
  const root = mkdtempSync(join(parent, 'nrq-lib-'));
  const dir = join(root, 'dist');
  mkdirSync(dir);
  writeFileSync(join(root, 'package.json'), readFileSync(join(source, '..', 'package.json')));
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
  return root;
}

const CACHED = 'nrq-lib-of-';
/** A build no suite has used for this long is from sources long gone: removed when a new one is made. */
const STALE_MS = 24 * 3600_000;

/** A digest of everything a build is made from: the sources, the package.json, the compiler and its options. */
function sourcesDigest(): string {
  const hash = createHash('sha256').update(`${ts.version}\0${JSON.stringify(compilerOptions)}\0`);
  hash.update(readFileSync(join(source, '..', 'package.json')));
  for (const file of [...sources(source, '.ts'), ...sources(source, '.lua')].sort())
    hash.update(`\0${relative(source, file)}\0`).update(readFileSync(file));
  return hash.digest('hex').slice(0, 20);
}

/**
 * The build of the sources as they are now, shared by every suite (and run) that needs one: made once
 * per content of the sources (a few seconds of transpiling, many on a loaded machine), kept in the
 * temporary directory under the digest of what it was made from, so that a change to any source makes
 * a new one. Two workers making it at once: the first rename wins, the other build is dropped.
 */
function sharedBuild(): string {
  const root = join(tmpdir(), `${CACHED}${sourcesDigest()}`);
  if (!existsSync(join(root, 'dist'))) {
    for (const entry of readdirSync(tmpdir())) {
      const path = join(tmpdir(), entry);
      if (entry.startsWith(CACHED) && Date.now() - statSync(path).mtimeMs > STALE_MS)
        rmSync(path, { recursive: true, force: true });
    }
    const made = build(tmpdir(), (_file, text) => text);
    try {
      renameSync(made, root);
    } catch (error) {
      rmSync(made, { recursive: true, force: true });
      if (!existsSync(join(root, 'dist'))) throw error;
    }
  }
  // In use: not stale for the builds made from other sources meanwhile.
  utimesSync(root, new Date(), new Date());
  return root;
}

/**
 * The library compiled for child processes (plain Node, no test runner) that must run the code under
 * test. Transpile-only and outside the tree: fast, needs no type-check of the whole tree, and never
 * races a build writing libs/queue/dist. Children resolve its dependencies through NODE_PATH (see
 * `libraryEnv`). Without `patch` it is the shared build of the current sources (see `sharedBuild`),
 * which `remove` leaves for the next suite; `patch` makes a private, deliberately broken library, for
 * tests that prove a suite notices the break, and `remove` deletes it.
 */
export function compileLibrary(patch?: SourcePatch): { dir: string; remove(): void } {
  if (!patch) return { dir: join(sharedBuild(), 'dist'), remove: () => {} };
  const root = build(tmpdir(), patch);
  return { dir: join(root, 'dist'), remove: () => rmSync(root, { recursive: true, force: true }) };
}

/** Environment for a child process that requires the compiled library from `dir`. */
export function libraryEnv(dir: string): NodeJS.ProcessEnv {
  return { ...process.env, NRQ_LIB: dir, NODE_PATH: join(__dirname, '../../node_modules') };
}
