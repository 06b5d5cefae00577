import { duplicateScript } from './redis.messages';

/**
 * One kind's scripts: the directory of their `.lua` files (`<dir>/<name>.lua`), the directories of the
 * includes only they use (read before the shared ones), and the names of its scripts, each defined by
 * its protocol in its own file beside its `.lua`. A plain value: a connection runs a set's scripts once
 * its kind adds the set to it (`Scripts.add`), so the Redis layer names no kind and importing a file
 * registers nothing.
 */
export interface ScriptSet {
  readonly dir: string;
  readonly includes: readonly string[];
  readonly scripts: readonly string[];
}

/** The set of the scripts that `protocols` define (see `ScriptSet`): each name once. */
export function scriptSet(
  dir: string,
  includes: readonly string[],
  protocols: readonly { readonly script: string }[],
): ScriptSet {
  const scripts: string[] = [];
  for (const { script } of protocols) {
    if (scripts.includes(script)) throw duplicateScript(script, dir, dir);
    scripts.push(script);
  }
  return { dir, includes, scripts };
}
