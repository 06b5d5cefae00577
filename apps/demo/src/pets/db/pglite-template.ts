import { PGlite } from '@electric-sql/pglite';
import { mkdir, readFile, rename, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';

/**
 * A new in-memory PGlite, started from a copy of an empty database made once per PGlite version.
 * Creating one runs initdb in WebAssembly, 5-20 s; loading the copy takes 1-4 s, which is what a demo's
 * start-up and each demo test pay after the first.
 */
export async function freshPglite(): Promise<PGlite> {
  const template = join(tmpdir(), 'nrq-demo-pglite', `empty-${await pgliteVersion()}.tar.gz`);
  const copy = await readFile(template).catch(() => null);
  if (copy) return PGlite.create({ loadDataDir: new Blob([copy]) });
  const client = await PGlite.create();
  const dump = Buffer.from(await (await client.dumpDataDir('gzip')).arrayBuffer());
  // Renamed into place: a concurrent start-up reads a whole copy or none.
  await mkdir(dirname(template), { recursive: true });
  const partial = `${template}.${process.pid}`;
  await writeFile(partial, dump);
  await rename(partial, template);
  return client;
}

async function pgliteVersion(): Promise<string> {
  // The package's exports leave out its package.json: found from its entry point (dist/index.cjs).
  const manifest = join(dirname(require.resolve('@electric-sql/pglite')), '..', 'package.json');
  return (JSON.parse(await readFile(manifest, 'utf8')) as { version: string }).version;
}
