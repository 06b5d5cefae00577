import { join } from 'node:path';
import { duplicateScript, unknownScript } from './redis.messages';
import type { ScriptProtocol, ShardKeys } from './script-protocol';

/** Where the Lua helpers that several kinds use are; a kind's own are in its set's `includes`. */
export const SHARED_INCLUDES = join(__dirname, 'lua', 'includes');

/** A script's name: its protocol's, and its file's (`<name>.lua`), defined once in one `ScriptSet`. */
export type ScriptName = string;

const owners = new Map<ScriptName, ScriptSet>();
const sets: ScriptSet[] = [];

/**
 * One kind's scripts: the directory of their `.lua` files, the directories of the includes only they
 * use (read before `SHARED_INCLUDES`), and their protocols, each defined through `define` in its own
 * file beside its `.lua`. The Redis layer learns of a script when its protocol is defined, so it names
 * no kind, and the list of scripts is the protocols that exist (as bullmq reads its command files).
 */
export class ScriptSet {
  private readonly names: ScriptName[] = [];

  constructor(
    readonly dir: string,
    readonly includes: readonly string[],
  ) {}

  /** The names of the scripts defined so far. */
  get scripts(): readonly ScriptName[] {
    return this.names;
  }

  /** Registers a script's protocol: its name must be new to the library. */
  define<Name extends ScriptName, In, Out, Keys = ShardKeys>(
    protocol: ScriptProtocol<Name, In, Out, Keys>,
  ): ScriptProtocol<Name, In, Out, Keys> {
    const owner = owners.get(protocol.script);
    if (owner) throw duplicateScript(protocol.script, owner.dir, this.dir);
    owners.set(protocol.script, this);
    this.names.push(protocol.script);
    return protocol;
  }
}

/** A kind's set of scripts: `<dir>/<name>.lua`, its own includes in `includes` (see `ScriptSet`). */
export function scriptSet(dir: string, ...includes: string[]): ScriptSet {
  const set = new ScriptSet(dir, includes);
  sets.push(set);
  return set;
}

/** Every set of scripts, as the protocols imported so far defined them. */
export function scriptSets(): readonly ScriptSet[] {
  return sets;
}

/** Every script defined so far. */
export function scriptNames(): ScriptName[] {
  return [...owners.keys()];
}

/** The set that defines `script`; a name no protocol defined is an error that says so. */
export function ownerOf(script: ScriptName): ScriptSet {
  const owner = owners.get(script);
  if (owner === undefined) throw unknownScript(script);
  return owner;
}
