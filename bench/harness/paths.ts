import { existsSync } from 'node:fs';
import { dirname, join } from 'node:path';

/** The repository root, found from here whether this runs from bench/ (Jest) or compiled under dist/bench/. */
export function repoRoot(): string {
  for (let dir = __dirname; ; dir = dirname(dir)) {
    if (existsSync(join(dir, 'scripts', 'redis.js')) && existsSync(join(dir, 'bench'))) return dir;
    if (dirname(dir) === dir) throw new Error(`cannot find the repository root above ${__dirname}`);
  }
}
