import { getMetadataStorage, type ValidationError } from 'class-validator';
import { closest } from './closest';

/** The constraints one integer rule is written with: `@IsInt() @Min(a) @Max(b)`, said as one. */
const INTEGER_PARTS = new Set(['isInt', 'min', 'max']);
const MAX_SHOWN = 60;

type ValidationMetadata = ReturnType<ReturnType<typeof getMetadataStorage>['getTargetValidationMetadatas']>[number];

/** A value as its giver should read it back: a string is quoted and called one, since env variables are strings. */
export function describeValue(value: unknown): string {
  if (typeof value === 'string') {
    const shown = value.length > MAX_SHOWN ? `${value.slice(0, MAX_SHOWN)}…` : value;
    return `${JSON.stringify(shown)}, a string`;
  }
  if (value === null) return 'null';
  if (Array.isArray(value)) return 'an array';
  if (typeof value === 'function') return 'a function';
  if (typeof value === 'object') return 'an object';
  return String(value);
}

function rulesOf(target: object | undefined): ValidationMetadata[] {
  if (!target) return [];
  return getMetadataStorage().getTargetValidationMetadatas(target.constructor, '', true, false);
}

/** The keys a rules class knows: every property carrying a rule (`@Allow()` for those passed through as given). */
export function knownOptions(rules: ValidationMetadata[]): string[] {
  return [...new Set(rules.map((rule) => rule.propertyName))];
}

/** The keys a rules class knows, its own first, then those it inherits. */
export function optionKeys(rules: new () => object): string[] {
  return knownOptions(getMetadataStorage().getTargetValidationMetadatas(rules, '', true, false));
}

/** `delay is not an option (did you mean delayMs?)`, or the known keys when none is near enough to be a typo. */
export function unknownOption(key: string, known: readonly string[], parent = ''): string {
  const path = parent ? `${parent}.${key}` : key;
  const meant = closest(key, known);
  return meant
    ? `${path} is not an option (did you mean ${parent ? `${parent}.` : ''}${meant}?)`
    : `${path} is not an option (known: ${known.join(', ')})`;
}

/** `must be an integer between 1 and 10000`, from the property's isInt / min / max rules. */
function integerRule(rules: ValidationMetadata[], property: string): string | undefined {
  const own = rules.filter((rule) => rule.propertyName === property);
  if (!own.some((rule) => rule.name === 'isInt')) return undefined;
  const bound = (name: string): unknown => own.find((rule) => rule.name === name)?.constraints?.[0];
  const [min, max] = [bound('min'), bound('max')];
  if (min !== undefined && max !== undefined) return `must be an integer between ${min} and ${max}`;
  if (min !== undefined) return `must be an integer ≥ ${min}`;
  if (max !== undefined) return `must be an integer ≤ ${max}`;
  return 'must be an integer';
}

/**
 * Flattens class-validator's tree of an options object into one line per broken option, each with the
 * value received, and names an unknown key with the known one it most likely meant.
 */
export function describeOptionViolations(errors: ValidationError[], parent = ''): string[] {
  const lines: string[] = [];
  for (const error of errors) {
    const path = parent ? `${parent}.${error.property}` : error.property;
    const constraints = error.constraints ?? {};
    const rules = rulesOf(error.target);
    if ('whitelistValidation' in constraints) {
      lines.push(unknownOption(error.property, knownOptions(rules), parent));
      continue;
    }
    const integer = Object.keys(constraints).some((name) => INTEGER_PARTS.has(name))
      ? integerRule(rules, error.property)
      : undefined;
    const messages = new Set<string>();
    for (const [name, message] of Object.entries(constraints))
      messages.add(integer && INTEGER_PARTS.has(name) ? `${error.property} ${integer}` : message);
    for (const message of messages) {
      const line = message.startsWith(error.property)
        ? path + message.slice(error.property.length)
        : `${path}: ${message}`;
      lines.push(line.includes('(got ') ? line : `${line} (got ${describeValue(error.value)})`);
    }
    if (error.children?.length) lines.push(...describeOptionViolations(error.children, path));
  }
  return lines;
}
