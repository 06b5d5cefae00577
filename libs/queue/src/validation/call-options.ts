import { QueueInputError } from '../errors';
import { describeValue, unknownOption } from './option-violations';

/** The problems of one per-call option's value, each a line naming `path`; none when it is acceptable. */
type Rule = (value: unknown, path: string) => string[];

/** The keys a call's options object may hold, and the shape to name when something else is passed. */
interface CallOptionRules {
  readonly shape: string;
  readonly keys: Readonly<Record<string, Rule>>;
}

const kind =
  (accepts: (value: unknown) => boolean, rule: string): Rule =>
  (value, path) =>
    accepts(value) ? [] : [`${path} ${rule} (got ${describeValue(value)})`];

const boolean = kind((value) => typeof value === 'boolean', 'must be true or false');
const string = kind((value) => typeof value === 'string', 'must be a string');
// Ranges and whole milliseconds are checked where each value is used; this refuses the wrong kind of value.
const number = kind((value) => typeof value === 'number', 'must be a number');
const time = kind(
  (value) => value instanceof Date || typeof value === 'number' || typeof value === 'string',
  'must be a Date, epoch milliseconds or an ISO 8601 string',
);

/** Every problem of an options object: unknown keys (with the known one most likely meant) and wrong values. */
function problemsOf(options: unknown, rules: CallOptionRules, path = ''): string[] {
  if (options === null || typeof options !== 'object' || Array.isArray(options) || options instanceof Date)
    return [`${path ? `${path}: ` : ''}expected an options object ${rules.shape}, got ${describeValue(options)}`];
  const known = Object.keys(rules.keys);
  const problems: string[] = [];
  for (const [key, value] of Object.entries(options)) {
    if (!Object.hasOwn(rules.keys, key)) problems.push(unknownOption(key, known, path));
    else if (value !== undefined) problems.push(...rules.keys[key](value, path ? `${path}.${key}` : key));
  }
  return problems;
}

const HEALTH_LIMITS: CallOptionRules = {
  shape: '{ maxBacklog?, maxLagMs? }',
  keys: { maxBacklog: number, maxLagMs: number },
};

/** `queues` of a health check: names, or limits by queue name (each checked like the top-level ones). */
const healthQueues: Rule = (value, path) => {
  if (Array.isArray(value))
    return value.every((name) => typeof name === 'string')
      ? []
      : [`${path} must be queue names or limits by queue name (got an array holding something else)`];
  if (value === null || typeof value !== 'object')
    return [`${path} must be queue names or limits by queue name (got ${describeValue(value)})`];
  return Object.entries(value).flatMap(([name, limits]) => problemsOf(limits, HEALTH_LIMITS, `${path}.${name}`));
};

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
  repeatEvery: { shape: '{ cron } or { everyMs }', keys: { cron: string, everyMs: number } },
  repeat: {
    shape: '{ tz?, startAt?, endAt?, missed? }',
    keys: { tz: string, startAt: time, endAt: time, missed: string },
  },
  deleteDead: { shape: '{ olderThan? }', keys: { olderThan: number } },
  health: {
    shape: '{ maxBacklog?, maxLagMs?, timeoutMs?, queues? }',
    keys: { ...HEALTH_LIMITS.keys, timeoutMs: number, recurringGraceMs: number, queues: healthQueues },
  },
} satisfies Record<string, CallOptionRules>;

/**
 * Refuses options with a key the call does not know (naming the known key it most likely meant) or a value
 * of the wrong kind, with one QueueInputError naming every problem. Undefined means "not given", for the
 * object as for each key. Call it before anything is written.
 */
export function assertCallOptions(call: string, options: unknown, rules: CallOptionRules): void {
  if (options === undefined) return;
  const problems = problemsOf(options, rules);
  if (problems.length > 0) throw new QueueInputError(`${call}: ${problems.join('; ')}`);
}
