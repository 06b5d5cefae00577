import { isDeepStrictEqual } from 'node:util';
import { resolveOptions, type Checks } from './apply-rules';
import { formerNameRead } from './validation.messages';

/**
 * An option's former name, still read as the option it became, with a warning at start-up (its rule stays
 * beside the current one's, so a bad value is refused under the name it was given).
 */
export interface FormerName<T> {
  former: keyof T & string;
  current: keyof T & string;
  /** What both name, in a refusal of the two given different values: "the lease". */
  names: string;
  /** The former option's value as the current one's. */
  read: (value: never) => unknown;
  /** How to write it now, in the warning, given the value it came with. */
  advice: (value: never) => string;
}

/** `key=value` in a refusal or a warning: objects as they would be written in code. */
export function written(value: unknown): string {
  if (value === null || typeof value !== 'object') return typeof value === 'string' ? `'${value}'` : String(value);
  const fields = Object.entries(value).map(([key, field]) => `${key}: ${written(field)}`);
  return `{ ${fields.join(', ')} }`;
}

/** Refuses a former name and its current one given with values that disagree. */
function agreeing<T extends object>(formers: FormerName<T>[]): Checks<T> {
  return (options, given) =>
    formers.flatMap(({ former, current, names, read }) => {
      if (!given.has(former) || !given.has(current)) return [];
      const [then, now] = [read(options[former] as never), options[current]];
      if (isDeepStrictEqual(plain(then), plain(now))) return [];
      return [
        `${current} and ${former} are two names of ${names}, given different values ` +
          `(got ${current}=${written(now)}, ${former}=${written(options[former])}): give ${current} alone`,
      ];
    });
}

/** A rules instance's fields, to compare with a plain object. */
const plain = (value: unknown): unknown => (value !== null && typeof value === 'object' ? { ...value } : value);

/**
 * A resolver of options that still reads `formers`: `resolveOptions`, then every former name given read
 * as the option it became and left out of the result; `warn` is told of each, in words that name
 * `label`, the former name and what to write now.
 */
export function withFormerNames<T extends object>(
  rules: new () => T,
  checks: Checks<T>,
  formers: FormerName<T>[],
): (raw: unknown, label: string, warn: (message: string) => void) => T {
  const both = agreeing(formers);
  const allChecks: Checks<T> = (o, given) => [...checks(o, given), ...both(o, given)];
  return (raw, label, warn) => {
    const read = { ...resolveOptions(rules, raw, label, allChecks) } as Record<string, unknown>;
    for (const { former, current, read: asCurrent, advice } of formers) {
      const value = read[former];
      if (value === undefined) continue;
      delete read[former];
      read[current] = asCurrent(value as never);
      warn(formerNameRead(label, former, advice(value as never), current));
    }
    return read as T;
  };
}
