import { createHash } from 'node:crypto';
import { join } from 'node:path';
import { loadScript } from './lua-loader';
import { duplicateScript, unknownScript } from './redis.messages';
import type { ScriptSet } from './script-set';

/** Where the Lua helpers that several kinds use are; a kind's own are in its set's `includes`. */
export const SHARED_INCLUDES = join(__dirname, 'lua', 'includes');

interface Loaded {
  lua: string;
  sha: string;
}

/**
 * The scripts one connection may run: the sets its queue kinds added (`add`), each script's text read
 * once, its includes inlined, with its SHA. A name must be new to the library.
 */
export class ScriptLibrary {
  private readonly owners = new Map<string, ScriptSet>();
  private readonly loaded = new Map<string, Loaded>();
  private readonly added: ScriptSet[] = [];

  /** The sets added so far. */
  get sets(): readonly ScriptSet[] {
    return this.added;
  }

  /** Adds a set's scripts, read when first asked for (`load`); adding a set again changes nothing. */
  add(set: ScriptSet): void {
    if (this.added.includes(set)) return;
    for (const script of set.scripts) {
      const owner = this.owners.get(script);
      if (owner) throw duplicateScript(script, owner.dir, set.dir);
    }
    this.added.push(set);
    for (const script of set.scripts) this.owners.set(script, set);
  }

  /** Every script added so far. */
  names(): string[] {
    return [...this.owners.keys()];
  }

  /** A script's text as Redis runs it, its includes inlined. */
  text(script: string): string {
    return this.load(script).lua;
  }

  /** A script's text and SHA; a name no added set defines is an error that says so. */
  load(script: string): Loaded {
    let entry = this.loaded.get(script);
    if (entry === undefined) {
      const owner = this.owners.get(script);
      if (owner === undefined) throw unknownScript(script);
      const lua = loadScript(owner.dir, script, [...owner.includes, SHARED_INCLUDES]);
      entry = { lua, sha: createHash('sha1').update(lua).digest('hex') };
      this.loaded.set(script, entry);
    }
    return entry;
  }
}
