import { addSource, claim, type ScriptSource } from './script-registry';
import type { ScriptProtocol, ShardKeys } from './script-protocol';

/**
 * One kind's scripts: the directory of their `.lua` files, the directories of the includes only they
 * use, and their protocols, each defined through `define` in its own file beside its `.lua`. The Redis
 * layer learns of a script when its protocol is defined, so it names no kind, and the list of scripts
 * is the protocols that exist (as bullmq reads its command files).
 */
export class ScriptSet implements ScriptSource {
  private readonly names: string[] = [];

  constructor(
    readonly dir: string,
    readonly includes: readonly string[],
  ) {}

  get scripts(): readonly string[] {
    return this.names;
  }

  /** Registers a script's protocol: its name must be new to the library. */
  define<Name extends string, In, Out, Keys = ShardKeys>(
    protocol: ScriptProtocol<Name, In, Out, Keys>,
  ): ScriptProtocol<Name, In, Out, Keys> {
    claim(protocol.script, this);
    this.names.push(protocol.script);
    return protocol;
  }
}

/** A kind's set of scripts: `<dir>/<name>.lua`, its own includes in `includes` (see `ScriptSet`). */
export function scriptSet(dir: string, ...includes: string[]): ScriptSet {
  const set = new ScriptSet(dir, includes);
  addSource(set);
  return set;
}
