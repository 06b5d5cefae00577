import { join } from 'node:path';
import { duplicateScript, unknownScript } from './redis.messages';

/** Where the Lua helpers that several kinds use are; a kind's own are in its set's `includes`. */
export const SHARED_INCLUDES = join(__dirname, 'lua', 'includes');

/** Where a set of scripts is: `<dir>/<name>.lua`, its own includes in `includes` (read before the shared ones). */
export interface ScriptSource {
  readonly dir: string;
  readonly includes: readonly string[];
  /** The names of its scripts defined so far. */
  readonly scripts: readonly string[];
}

const owners = new Map<string, ScriptSource>();
const sources: ScriptSource[] = [];

/** Adds a set of scripts (see `scriptSet`), empty until its protocols define them. */
export function addSource(source: ScriptSource): void {
  sources.push(source);
}

/** Records that `source` defines `script`: a name must be new to the library. */
export function claim(script: string, source: ScriptSource): void {
  const owner = owners.get(script);
  if (owner) throw duplicateScript(script, owner.dir, source.dir);
  owners.set(script, source);
}

/** Every set of scripts, as the protocols imported so far defined them. */
export function scriptSets(): readonly ScriptSource[] {
  return sources;
}

/** Every script defined so far. */
export function scriptNames(): string[] {
  return [...owners.keys()];
}

/** The set that defines `script`; a name no protocol defined is an error that says so. */
export function ownerOf(script: string): ScriptSource {
  const owner = owners.get(script);
  if (owner === undefined) throw unknownScript(script);
  return owner;
}
