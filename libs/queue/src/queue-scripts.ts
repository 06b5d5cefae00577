import { DELAY_QUEUE_SCRIPTS } from './delay-queue/lua/delay-queue.scripts';
import { FIXED_QUEUE_SCRIPTS } from './fixed-queue/lua/fixed-queue.scripts';
import { RECURRING_SCRIPTS } from './recurring/lua/recurring.scripts';
import { QUEUE_SCRIPTS } from './redis/lua/queue.scripts';
import { ScriptLibrary } from './redis/script-library';

/**
 * Every script of the package, apart from any connection: what the build ships (each set's scripts,
 * their includes inlined) and what tools and tests read. A connection holds only the sets its queue
 * kinds added (`Scripts.add`).
 */
export function scriptLibrary(): ScriptLibrary {
  const library = new ScriptLibrary();
  for (const set of [QUEUE_SCRIPTS, FIXED_QUEUE_SCRIPTS, DELAY_QUEUE_SCRIPTS, RECURRING_SCRIPTS]) library.add(set);
  return library;
}
