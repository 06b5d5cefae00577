import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { includeNotFound, unreadableInclude } from './redis.messages';

/** A line `--- @include "name"` stands for the text of `<includes>/<name>.lua`. */
const INCLUDE = /^--- @include "([\w-]+)"[ \t]*$/gm;

/**
 * Reads `<name>.lua` from `dir` with its includes inlined, each read from the first of the `includes`
 * directories that has it (a kind's own, then the shared ones). Redis runs each script
 * alone, so shared helpers cannot be loaded beside it: they are pasted in as plain text (bullmq's
 * `@include` idea).
 * Includes nest; each is inlined once, where it first appears, so two that need the same helper may
 * both say so. An already inlined script (as the package ships them) comes back unchanged.
 * An include only defines functions (and constants) that take what they need as parameters, never the
 * including script's locals, so it reads alone and two scripts cannot use it differently by accident.
 */
export function loadScript(dir: string, name: string, includes: readonly string[]): string {
  return inline(readFileSync(join(dir, `${name}.lua`), 'utf8'), name, (include) => {
    const file = includes.map((from) => join(from, `${include}.lua`)).find((path) => existsSync(path));
    if (file === undefined) throw includeNotFound(include, includes);
    return readFileSync(file, 'utf8');
  });
}

/** Replaces include lines of `source` (the script `script`), using `read` for an include's text. */
export function inline(source: string, script: string, read: (include: string) => string): string {
  const done = new Set<string>();
  const expand = (text: string, from: string): string =>
    text.replace(INCLUDE, (_, include: string) => {
      if (done.has(include)) return '';
      done.add(include);
      let body: string;
      try {
        body = read(include);
      } catch (error) {
        throw unreadableInclude(script, include, from, error);
      }
      return expand(body, include).replace(/\n$/, '');
    });
  return expand(source, script);
}
