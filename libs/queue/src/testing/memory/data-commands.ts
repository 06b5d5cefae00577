import type { Keyspace } from './keyspace';
import type { Reply } from './reply';
import { Refused, type Spec } from './data-values';
import { HASH_COMMANDS } from './hash-commands';
import { KEY_COMMANDS } from './key-commands';
import { LIST_COMMANDS } from './list-commands';
import { ZSET_COMMANDS } from './zset-commands';

/** Every data command, by name: one table, so a command costs one lookup whatever its type. */
const COMMANDS: Record<string, Spec> = { ...KEY_COMMANDS, ...HASH_COMMANDS, ...LIST_COMMANDS, ...ZSET_COMMANDS };

/** Whether `name` (upper case) is a data command, and whether `count` arguments suit it. */
export function dataCommand(name: string): Spec | undefined {
  return Object.prototype.hasOwnProperty.call(COMMANDS, name) ? COMMANDS[name] : undefined;
}

/** Runs a data command; a refusal (wrong type, bad number) is its error reply. */
export function runData(spec: Spec, args: string[], keys: Keyspace): Reply {
  try {
    return spec.run(args, keys);
  } catch (error) {
    if (error instanceof Refused) return error.reply;
    throw error;
  }
}
