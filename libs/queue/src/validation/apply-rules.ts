import { plainToInstance } from 'class-transformer';
import { validateSync } from 'class-validator';
import { describeOptionViolations, optionKeys, unknownOption } from './option-violations';
import { directRules } from './direct-rules';
import { badOptions, notAnOptionsObject } from './validation.messages';

/** Every key of any member of a union (`keyof` a union is only the keys all its members share). */
type AnyKeyOf<U> = U extends unknown ? keyof U : never;

/**
 * Implemented by every rules class, with the public options it checks: a key of either that the other
 * lacks does not compile. (`implements Options` alone lets an optional option be left out of the class.)
 */
export type SameKeys<Options, Rules> = { [K in Exclude<AnyKeyOf<Options>, keyof Rules>]-?: unknown } & Record<
  Exclude<keyof Rules, AnyKeyOf<Options>>,
  never
>;

/**
 * Cross-field rules. `given` holds the keys the caller set: a rule broken by a default says so
 * (`batchSize=128 by default`), or the caller looks for a value they never wrote.
 */
export type Checks<T> = (options: T, given: ReadonlySet<string>) => string[];

/** `key=value`, or `key=value by default` when the caller left it out. */
export function shown<T extends object>(options: T, given: ReadonlySet<string>, key: keyof T & string): string {
  return `${key}=${String(options[key])}${given.has(key) ? '' : ' by default'}`;
}

/**
 * Options laid over their rules class (its defaults filling what was left out, undefined counting as left
 * out), and every rule they break, each with the value received, nested paths in full under `path`. Keys
 * no rule knows are refused (a typo would otherwise leave the default in force, silently): every option
 * needs a rule, or `@Allow()` if it is passed through as given. Cross-field rules come from `checks`,
 * run only when each field is valid. Module, queue, consumer, decorator and per-call options all go
 * through it; `raw` is an object.
 */
export function applyRules<T extends object>(
  rules: new () => T,
  raw: object,
  checks?: Checks<T>,
  path = '',
): { options: T; problems: string[] } {
  const values = raw as Record<string, unknown>;
  const given: string[] = [];
  const problems: string[] = [];
  for (const key of Object.keys(values)) {
    if (values[key] === undefined) continue;
    // A key JSON.parse makes, which no rule sees: assigned, it would replace the prototype instead.
    if (key === '__proto__') problems.push(unknownOption(key, optionKeys(rules), path));
    else given.push(key);
  }
  const direct = directRules(rules);
  const options = direct ? new rules() : transformed(rules, values, given);
  if (direct) for (const key of given) (options as Record<string, unknown>)[key] = values[key];
  if (!direct?.(options as Record<string, unknown>)) {
    const errors = validateSync(options, { forbidUnknownValues: false, whitelist: true, forbidNonWhitelisted: true });
    problems.push(...describeOptionViolations(errors, path));
  }
  if (problems.length === 0 && checks) problems.push(...checks(options, new Set(given)));
  return { options, problems };
}

/**
 * Options whose nested ones class-transformer makes instances of their own rules classes, defaults
 * applied. Classes and callbacks (schema, onFailed) are laid over as given: it would copy them.
 */
function transformed<T extends object>(rules: new () => T, values: Record<string, unknown>, keys: string[]): T {
  const data: Record<string, unknown> = {};
  for (const key of keys) if (typeof values[key] !== 'function') data[key] = values[key];
  const options = plainToInstance(rules, data, { exposeDefaultValues: true });
  for (const key of keys)
    if (typeof values[key] === 'function') (options as Record<string, unknown>)[key] = values[key];
  return options;
}

/**
 * Module, queue and decorator options with their defaults applied, or one QueueConfigError naming every
 * broken rule with the value received (see `applyRules`).
 */
export function resolveOptions<T extends object>(
  rules: new () => T,
  raw: unknown,
  label: string,
  checks?: Checks<T>,
): T {
  if (raw === null || typeof raw !== 'object') {
    throw notAnOptionsObject(label, raw);
  }
  const { options, problems } = applyRules(rules, raw, checks);
  if (problems.length > 0) throw badOptions(label, problems);
  return options;
}
