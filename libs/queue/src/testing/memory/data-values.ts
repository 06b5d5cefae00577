import type { Keyspace, Value, ValueType } from './keyspace';
import { ErrorReply, notInteger, wrongType, type Reply } from './reply';
import { SortedSet } from './sorted-set';

/** A data command: its arguments after the name, the keyspace; its reply. */
export type DataCommand = (args: string[], keys: Keyspace) => Reply;

/** A data command as the dispatcher knows it: how to run it and what arguments it takes. */
export interface Spec {
  run: DataCommand;
  /** Least number of arguments after the name; `exact` when it takes no more. */
  min: number;
  exact?: boolean;
}

/** Scores as Redis writes them: the shortest text that reads back as the same double. */
export function formatScore(score: number): string {
  if (score === Infinity) return 'inf';
  if (score === -Infinity) return '-inf';
  return String(score);
}

export function parseScore(text: string): number | undefined {
  const lower = text.toLowerCase();
  if (lower === 'inf' || lower === '+inf') return Infinity;
  if (lower === '-inf') return -Infinity;
  if (text.trim() === '' || text !== text.trim()) return undefined;
  const value = Number(text);
  return Number.isNaN(value) ? undefined : value;
}

export function parseInteger(text: string): number | undefined {
  if (!/^-?\d+$/.test(text)) return undefined;
  const value = Number(text);
  return Number.isSafeInteger(value) ? value : undefined;
}

export class Refused extends Error {
  constructor(readonly reply: ErrorReply) {
    super(reply.message);
  }
}

export function integer(text: string): number {
  const value = parseInteger(text);
  if (value === undefined) throw new Refused(notInteger());
  return value;
}

/** A key's value of the given type, undefined when absent; WRONGTYPE when of another type. */
export function read<T extends ValueType>(
  keys: Keyspace,
  key: string,
  type: T,
): Extract<Value, { type: T }> | undefined {
  const value = keys.get(key);
  if (value === undefined) return undefined;
  if (value.type !== type) throw new Refused(wrongType());
  return value as Extract<Value, { type: T }>;
}

export function write<T extends ValueType>(
  keys: Keyspace,
  key: string,
  type: T,
  create: () => Value,
): Extract<Value, { type: T }> {
  const existing = read(keys, key, type);
  if (existing) return existing;
  const value = create();
  keys.set(key, value);
  return value as Extract<Value, { type: T }>;
}

export const hash = (keys: Keyspace, key: string) =>
  write(keys, key, 'hash', () => ({ type: 'hash', value: new Map() }));
export const list = (keys: Keyspace, key: string) => write(keys, key, 'list', () => ({ type: 'list', value: [] }));
export const zset = (keys: Keyspace, key: string) =>
  write(keys, key, 'zset', () => ({ type: 'zset', value: new SortedSet() }));

/** Redis' index range: negative from the end, clamped; undefined when empty. */
export function range(start: number, stop: number, length: number): [number, number] | undefined {
  if (start < 0) start = Math.max(0, length + start);
  if (stop < 0) stop = length + stop;
  stop = Math.min(stop, length - 1);
  return start > stop || start >= length ? undefined : [start, stop];
}

/**
 * Removes each of `items` from the collection at `key` (of `type`) with `remove`, dropping the key once
 * empty, as Redis does: how many were there.
 */
export function removeEach<T extends ValueType, C = Extract<Value, { type: T }>['value']>(
  keys: Keyspace,
  key: string,
  type: T,
  items: string[],
  remove: (collection: C, item: string) => boolean,
): number {
  const value = read(keys, key, type);
  if (!value) return 0;
  const collection = value.value as C;
  const removed = items.filter((item) => remove(collection, item)).length;
  keys.dropIfEmpty(key, value);
  return removed;
}
