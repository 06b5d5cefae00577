import { QueueInputError } from '../errors';
import { describeValue, unknownOption } from './option-violations';

/** What one per-call option accepts: undefined when the value is acceptable, else what it must be. */
type Rule = (value: unknown) => string | undefined;

/** The keys a call's options object may hold, and the shape to name when something else is passed. */
interface CallOptionRules {
  readonly shape: string;
  readonly keys: Readonly<Record<string, Rule>>;
}

const boolean: Rule = (value) => (typeof value === 'boolean' ? undefined : 'must be true or false');
const string: Rule = (value) => (typeof value === 'string' ? undefined : 'must be a string');
// Ranges and whole milliseconds are checked where each value is used; this refuses the wrong kind of value.
const number: Rule = (value) => (typeof value === 'number' ? undefined : 'must be a number');
const time: Rule = (value) =>
  value instanceof Date || typeof value === 'number' || typeof value === 'string'
    ? undefined
    : 'must be a Date, epoch milliseconds or an ISO 8601 string';

const TASK_TIME = { delayMs: number, runAt: time };

/**
 * The options of every public method that takes an options object. These are checked like module options
 * are, and for the same reason: a misspelt key (`{ delay: 5000 }`) would otherwise leave the default in
 * force, silently (a task due now instead of in five seconds).
 */
export const CALL_OPTIONS = {
  schedule: { shape: '{ id?, delayMs?, runAt?, replace? }', keys: { id: string, replace: boolean, ...TASK_TIME } },
  taskTime: { shape: '{ runAt } or { delayMs }', keys: TASK_TIME },
  page: { shape: '{ cursor?, limit? }', keys: { cursor: string, limit: number } },
  obliterate: { shape: '{ force? }', keys: { force: boolean } },
  deleteDead: { shape: '{ olderThan? }', keys: { olderThan: number } },
} satisfies Record<string, CallOptionRules>;

/**
 * Refuses options with a key the call does not know (naming the known key it most likely meant) or a value
 * of the wrong kind, with one QueueInputError naming every problem. Undefined means "not given", for the
 * object as for each key. Call it before anything is written.
 */
export function assertCallOptions(call: string, options: unknown, rules: CallOptionRules): void {
  if (options === undefined) return;
  if (options === null || typeof options !== 'object' || Array.isArray(options) || options instanceof Date)
    throw new QueueInputError(`${call}: expected an options object ${rules.shape}, got ${describeValue(options)}`);
  const known = Object.keys(rules.keys);
  const problems: string[] = [];
  for (const [key, value] of Object.entries(options)) {
    if (!Object.hasOwn(rules.keys, key)) problems.push(unknownOption(key, known));
    else if (value !== undefined) {
      const wrong = rules.keys[key](value);
      if (wrong) problems.push(`${key} ${wrong} (got ${describeValue(value)})`);
    }
  }
  if (problems.length > 0) throw new QueueInputError(`${call}: ${problems.join('; ')}`);
}
