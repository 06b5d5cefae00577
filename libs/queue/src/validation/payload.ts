import { plainToInstance } from 'class-transformer';
import { validateSync } from 'class-validator';
import { MAX_NAME_BYTES } from '../queue.constants';

import { describeViolations } from './violations';
import type { SchemaClass } from '../interfaces';
import {
  badArgument,
  badLimit,
  notAnObjectPayload,
  notSerialisable,
  payloadTooLarge,
  schemaViolated,
} from './validation.messages';

/** UTF-8 length without allocating when the string is obviously short (a char is at most 3 bytes). */
function utf8Length(text: string, limit: number): number {
  return text.length * 3 <= limit ? text.length : Buffer.byteLength(text);
}

/** ES2024's String.prototype.isWellFormed, present from Node 20, outside the ES2022 typings used here. */
type WellFormedCheck = string & { isWellFormed(): boolean };

/** Why `value` is no group name or task id (a non-empty string of at most 512 UTF-8 bytes); undefined when it is one. */
export function nameProblem(value: unknown): string | undefined {
  if (typeof value !== 'string') return `must be a string, got ${typeof value}`;
  if (value.length === 0) return 'must not be empty';
  // A lone surrogate has no UTF-8 form: Redis would store it as U+FFFD and two names would collide.
  if (!(value as WellFormedCheck).isWellFormed()) return 'contains a lone UTF-16 surrogate, which has no UTF-8 form';
  if (utf8Length(value, MAX_NAME_BYTES) > MAX_NAME_BYTES)
    return `is ${Buffer.byteLength(value)} bytes; the limit is ${MAX_NAME_BYTES}`;
  return undefined;
}

/** Checks a group name or task id: a non-empty string of at most 512 UTF-8 bytes. */
export function assertName(value: unknown, what: string): asserts value is string {
  const problem = nameProblem(value);
  if (problem !== undefined) throw badArgument(what, problem);
}

/**
 * Validates a payload against the queue's schema and serialises it, so that nothing reaches Redis
 * unless it can be delivered back exactly as JSON.
 */
export class PayloadCodec {
  constructor(
    private readonly queue: string,
    private readonly maxBytes: number,
    private readonly schema?: SchemaClass,
  ) {}

  encode(value: unknown): string {
    let json: string | undefined;
    try {
      json = JSON.stringify(value);
    } catch (error) {
      throw notSerialisable(this.queue, (error as Error).message);
    }
    if (json === undefined) {
      throw notSerialisable(this.queue, `${typeof value} has no JSON form`);
    }
    // JSON.stringify turns a Map or Set into {} and NaN or ±Infinity into null, silently: only a text
    // holding one of those can hide one, so the common payload pays for one scan, not a replacer.
    if (json.includes('{}') || json.includes('null')) {
      const lost = lostInJson(value);
      if (lost) throw notSerialisable(this.queue, lost);
    }
    // Serialised first: a cyclic or BigInt payload gets its own error before the schema walks it.
    if (this.schema) this.validate(value, this.schema);
    const bytes = utf8Length(json, this.maxBytes);
    if (bytes > this.maxBytes) {
      throw payloadTooLarge(this.queue, Buffer.byteLength(json), this.maxBytes);
    }
    return json;
  }

  private validate(value: unknown, schema: SchemaClass): void {
    if (value === null || typeof value !== 'object' || Array.isArray(value)) {
      throw notAnObjectPayload(this.queue, schema.name, value);
    }
    const instance = value instanceof schema ? value : plainToInstance(schema, value);
    const violations = describeViolations(validateSync(instance, { forbidUnknownValues: false }));
    if (violations.length > 0) {
      throw schemaViolated(this.queue, schema.name, violations);
    }
  }
}

/** What of `value` JSON would turn into something else (`{}` or `null`), said with where it is; undefined when nothing. */
function lostInJson(value: unknown): string | undefined {
  let lost: string | undefined;
  JSON.stringify(value, function (this: unknown, key: string, held: unknown) {
    if (lost) return undefined;
    const at = key === '' ? '' : ` at key ${JSON.stringify(key)}`;
    if (held instanceof Map) lost = `a Map${at} would arrive as {}; send Object.fromEntries(map) or [...map]`;
    else if (held instanceof Set) lost = `a Set${at} would arrive as {}; send [...set]`;
    else if (typeof held === 'number' && !Number.isFinite(held))
      lost = `${held}${at} would arrive as null; JSON has no NaN or Infinity`;
    return held;
  });
  return lost;
}

/** Checks a `limit` argument of a listing method: an integer from 1 to `max`. */
export function assertLimit(value: unknown, max: number): asserts value is number {
  if (typeof value !== 'number' || !Number.isInteger(value) || value < 1 || value > max) {
    throw badLimit(max, value);
  }
}
