import { DELAY_QUEUE_SCRIPTS } from '../delay-queue/lua/delay-queue.scripts';
import { FIXED_QUEUE_SCRIPTS } from '../fixed-queue/lua/fixed-queue.scripts';
import { QUEUE_SCRIPTS } from './lua/queue.scripts';
import { RECURRING_SCRIPTS } from '../recurring/lua/recurring.scripts';

/**
 * Every Lua script of the library, by the protocols that call them, with the directory that holds
 * their `.lua` files: what `Scripts` loads, and what the tests check against the files there.
 */
export const SCRIPT_SETS = [QUEUE_SCRIPTS, FIXED_QUEUE_SCRIPTS, DELAY_QUEUE_SCRIPTS, RECURRING_SCRIPTS];

/** A script's name: its protocol's, and its file's (`<name>.lua`). */
export type ScriptName = (typeof SCRIPT_SETS)[number]['protocols'][number]['script'];
