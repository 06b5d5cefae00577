import { readFileSync } from 'node:fs';
import { join } from 'node:path';

/**
 * The package's version, from its package.json (beside `dist/` in the package, beside `src/` in the
 * repository): what a process announces (QueueProcesses), so that health and the dashboard show which
 * versions share Redis during a deploy. Read once; 'unknown' where a bundler left no package.json.
 */
export const LIBRARY_VERSION: string = (() => {
  try {
    return (JSON.parse(readFileSync(join(__dirname, '..', 'package.json'), 'utf8')) as { version: string }).version;
  } catch {
    return 'unknown';
  }
})();
