import type { Keyspace, Value, ValueType } from './keyspace';
import { ErrorReply, OK, Status, notFloat, notInteger, syntaxError, wrongType, type Reply } from './reply';
import { SortedSet, type ScoredMember } from './sorted-set';

/** A data command: its arguments after the name, the keyspace; its reply. */
export type DataCommand = (args: string[], keys: Keyspace) => Reply;

interface Spec {
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

function parseScore(text: string): number | undefined {
  const lower = text.toLowerCase();
  if (lower === 'inf' || lower === '+inf') return Infinity;
  if (lower === '-inf') return -Infinity;
  if (text.trim() === '' || text !== text.trim()) return undefined;
  const value = Number(text);
  return Number.isNaN(value) ? undefined : value;
}

function parseInteger(text: string): number | undefined {
  if (!/^-?\d+$/.test(text)) return undefined;
  const value = Number(text);
  return Number.isSafeInteger(value) ? value : undefined;
}

class Refused extends Error {
  constructor(readonly reply: ErrorReply) {
    super(reply.message);
  }
}

function integer(text: string): number {
  const value = parseInteger(text);
  if (value === undefined) throw new Refused(notInteger());
  return value;
}

/** A key's value of the given type, undefined when absent; WRONGTYPE when of another type. */
function read<T extends ValueType>(keys: Keyspace, key: string, type: T): Extract<Value, { type: T }> | undefined {
  const value = keys.get(key);
  if (value === undefined) return undefined;
  if (value.type !== type) throw new Refused(wrongType());
  return value as Extract<Value, { type: T }>;
}

function write<T extends ValueType>(
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

const hash = (keys: Keyspace, key: string) => write(keys, key, 'hash', () => ({ type: 'hash', value: new Map() }));
const list = (keys: Keyspace, key: string) => write(keys, key, 'list', () => ({ type: 'list', value: [] }));
const zset = (keys: Keyspace, key: string) =>
  write(keys, key, 'zset', () => ({ type: 'zset', value: new SortedSet() }));

/** Redis' index range: negative from the end, clamped; undefined when empty. */
function range(start: number, stop: number, length: number): [number, number] | undefined {
  if (start < 0) start = Math.max(0, length + start);
  if (stop < 0) stop = length + stop;
  stop = Math.min(stop, length - 1);
  return start > stop || start >= length ? undefined : [start, stop];
}

function withScores(entries: ScoredMember[], scores: boolean): Reply[] {
  if (!scores) return entries.map(({ member }) => member);
  return entries.flatMap(({ member, score }) => [member, formatScore(score)]);
}

interface ScoreBound {
  value: number;
  exclusive: boolean;
}

function scoreBound(text: string): ScoreBound {
  const exclusive = text.startsWith('(');
  const value = parseScore(exclusive ? text.slice(1) : text);
  if (value === undefined) throw new Refused(new ErrorReply('ERR min or max is not a float'));
  return { value, exclusive };
}

function zrange(args: string[], keys: Keyspace, reverse = false, byScore = false): Reply {
  const [key, startText, stopText] = args;
  let scores = false;
  let limit: [number, number] | undefined;
  for (let i = 3; i < args.length; i++) {
    const option = args[i].toUpperCase();
    if (option === 'WITHSCORES') scores = true;
    else if (option === 'BYSCORE') byScore = true;
    else if (option === 'REV') reverse = true;
    else if (option === 'LIMIT' && i + 2 < args.length) {
      limit = [integer(args[i + 1]), integer(args[i + 2])];
      i += 2;
    } else throw new Refused(syntaxError());
  }
  const set = read(keys, key, 'zset')?.value;
  if (!set) return [];
  if (!byScore) {
    if (limit) throw new Refused(syntaxError());
    const bounds = range(integer(startText), integer(stopText), set.size);
    if (!bounds) return [];
    if (!reverse) return withScores(set.slice(bounds[0], bounds[1]), scores);
    const [first, last] = [set.size - 1 - bounds[1], set.size - 1 - bounds[0]];
    return withScores(set.slice(first, last).reverse(), scores);
  }
  // With REV, the first bound is the maximum.
  const min = scoreBound(reverse ? stopText : startText);
  const max = scoreBound(reverse ? startText : stopText);
  let entries = set.slice(
    set.firstAtOrAbove(min.value, min.exclusive),
    set.pastAtOrBelow(max.value, max.exclusive) - 1,
  );
  if (reverse) entries.reverse();
  if (limit) {
    const [offset, count] = limit;
    if (offset < 0) return [];
    entries = count < 0 ? entries.slice(offset) : entries.slice(offset, offset + count);
  }
  return withScores(entries, scores);
}

function zadd(args: string[], keys: Keyspace): Reply {
  const key = args[0];
  const flags = new Set<string>();
  let i = 1;
  while (i < args.length && ['NX', 'XX', 'GT', 'LT', 'CH', 'INCR'].includes(args[i].toUpperCase())) {
    flags.add(args[i++].toUpperCase());
  }
  const pairs = args.slice(i);
  if (pairs.length === 0 || pairs.length % 2 !== 0) throw new Refused(syntaxError());
  if (flags.has('NX') && (flags.has('XX') || flags.has('GT') || flags.has('LT')))
    throw new Refused(new ErrorReply('ERR GT, LT, and/or NX options at the same time are not compatible'));
  if (flags.has('GT') && flags.has('LT'))
    throw new Refused(new ErrorReply('ERR GT, LT, and/or NX options at the same time are not compatible'));
  const scores: number[] = [];
  for (let j = 0; j < pairs.length; j += 2) {
    const score = parseScore(pairs[j]);
    if (score === undefined) throw new Refused(notFloat());
    scores.push(score);
  }
  if (flags.has('INCR') && scores.length !== 1)
    throw new Refused(new ErrorReply('ERR INCR option supports a single increment-element pair'));
  if (flags.has('XX') && !read(keys, key, 'zset')) return flags.has('INCR') ? null : 0;
  const set = zset(keys, key).value;
  let added = 0;
  let changed = 0;
  let incremented: number | null = null;
  for (let j = 0; j < scores.length; j++) {
    const member = pairs[j * 2 + 1];
    const current = set.score(member);
    let score = scores[j];
    if (current === undefined) {
      if (flags.has('XX')) continue;
    } else {
      if (flags.has('NX')) continue;
      if (flags.has('INCR')) score += current;
      if ((flags.has('GT') && !(score > current)) || (flags.has('LT') && !(score < current))) continue;
    }
    incremented = score;
    if (current === undefined) added++;
    else if (current !== score) changed++;
    else continue;
    set.set(member, score);
  }
  keys.dropIfEmpty(key, { type: 'zset', value: set });
  if (flags.has('INCR')) return incremented === null ? null : formatScore(incremented);
  return flags.has('CH') ? added + changed : added;
}

/** A scan under way: the items of its collection when it began, and how far it got. */
interface ScanState {
  items: string[];
  at: number;
}

/** Scans under way by collection, so a cursor stays valid while its collection changes (see scan). */
const scans = new WeakMap<object, Map<number, ScanState>>();
/** Scans kept per collection: an abandoned one is dropped past this; its cursor then starts over. */
const SCANS_KEPT = 64;
let lastCursor = 0;

/**
 * One SCAN-family step over `collection`. Redis guarantees that an element present from the first call
 * to the last is returned, even when others are deleted in between (a script that deletes what it read
 * relies on it), so a cursor names a list of the items taken when the scan began, not an offset into
 * the live collection, which deletions would shift past unread items. Items gone since are skipped;
 * items added since are not returned, which Redis allows.
 */
function scan(
  args: string[],
  collection: object,
  items: () => string[],
  has: (item: string) => boolean,
  pairs: (item: string) => string[],
): Reply {
  const cursor = integer(args[0]);
  let count = 10;
  let match: RegExp | undefined;
  for (let i = 1; i + 1 < args.length; i += 2) {
    const option = args[i].toUpperCase();
    if (option === 'COUNT') count = Math.max(1, integer(args[i + 1]));
    else if (option === 'MATCH') match = globToRegExp(args[i + 1]);
    else if (option !== 'TYPE') throw new Refused(syntaxError());
  }
  let open = scans.get(collection);
  if (!open) scans.set(collection, (open = new Map()));
  const state = (cursor !== 0 && open.get(cursor)) || { items: items(), at: 0 };
  open.delete(cursor);
  const page = state.items.slice(state.at, state.at + count).filter((item) => has(item));
  state.at += count;
  let next = 0;
  if (state.at < state.items.length) {
    next = ++lastCursor;
    open.set(next, state);
    if (open.size > SCANS_KEPT) open.delete(open.keys().next().value!);
  }
  return [String(next), page.filter((item) => !match || match.test(item)).flatMap(pairs)];
}

export function globToRegExp(pattern: string): RegExp {
  let source = '';
  for (let i = 0; i < pattern.length; i++) {
    const char = pattern[i];
    if (char === '*') source += '.*';
    else if (char === '?') source += '.';
    else if (char === '\\' && i + 1 < pattern.length) source += `\\${pattern[++i]}`;
    else if (char === '[') {
      const end = pattern.indexOf(']', i + 1);
      if (end < 0) source += '\\[';
      else {
        source += `[${pattern
          .slice(i + 1, end)
          .replace(/^\^/, '^')
          .replace(/\\/g, '\\\\')}]`;
        i = end;
      }
    } else source += char.replace(/[.+^${}()|\\/]/g, '\\$&');
  }
  return new RegExp(`^${source}$`, 's');
}

const COMMANDS: Record<string, Spec> = {
  // Keys
  DEL: { min: 1, run: (args, keys) => args.filter((key) => keys.get(key) && keys.delete(key)).length },
  EXISTS: { min: 1, run: (args, keys) => args.filter((key) => keys.get(key) !== undefined).length },
  TYPE: { min: 1, exact: true, run: ([key], keys) => new Status(keys.get(key)?.type ?? 'none') },
  PEXPIRE: {
    min: 2,
    run: ([key, ms], keys) => {
      if (!keys.get(key)) return 0;
      keys.expireAt(key, keys.now() + integer(ms));
      return 1;
    },
  },
  EXPIRE: {
    min: 2,
    run: ([key, seconds], keys) => {
      if (!keys.get(key)) return 0;
      keys.expireAt(key, keys.now() + integer(seconds) * 1000);
      return 1;
    },
  },
  PERSIST: { min: 1, exact: true, run: ([key], keys) => (keys.get(key) && keys.persist(key) ? 1 : 0) },
  PTTL: { min: 1, exact: true, run: ([key], keys) => keys.ttl(key) },
  TTL: {
    min: 1,
    exact: true,
    run: ([key], keys) => {
      const ms = keys.ttl(key);
      return ms < 0 ? ms : Math.round(ms / 1000);
    },
  },
  KEYS: {
    min: 1,
    exact: true,
    run: ([pattern], keys) => {
      const match = globToRegExp(pattern);
      return keys.keys().filter((key) => match.test(key));
    },
  },
  SCAN: {
    min: 1,
    run: (args, keys) =>
      scan(
        args,
        keys,
        () => keys.keys(),
        (key) => keys.get(key) !== undefined,
        (key) => [key],
      ),
  },
  // An opaque image of a value, as Redis' DUMP is: equal for equal values (a test's "left untouched").
  DUMP: {
    min: 1,
    exact: true,
    run: ([key], keys) => {
      const value = keys.get(key);
      if (!value) return null;
      const content =
        value.type === 'string' || value.type === 'list'
          ? value.value
          : value.type === 'zset'
            ? value.value.entries()
            : [...value.value];
      return JSON.stringify([value.type, content]);
    },
  },
  DBSIZE: { min: 0, exact: true, run: (_args, keys) => keys.keys().length },
  // Strings
  GET: {
    min: 1,
    exact: true,
    run: ([key], keys) => read(keys, key, 'string')?.value ?? null,
  },
  SET: {
    min: 2,
    run: ([key, value, ...options], keys) => {
      keys.delete(key);
      keys.set(key, { type: 'string', value });
      for (let i = 0; i + 1 < options.length; i += 2) {
        const option = options[i].toUpperCase();
        if (option === 'PX') keys.expireAt(key, keys.now() + integer(options[i + 1]));
        else if (option === 'EX') keys.expireAt(key, keys.now() + integer(options[i + 1]) * 1000);
      }
      return OK;
    },
  },
  INCRBY: {
    min: 2,
    exact: true,
    run: ([key, by], keys) => {
      const current = read(keys, key, 'string');
      const next = integer(current?.value ?? '0') + integer(by);
      keys.set(key, { type: 'string', value: String(next) });
      return next;
    },
  },
  // Hashes
  HGET: { min: 2, exact: true, run: ([key, field], keys) => read(keys, key, 'hash')?.value.get(field) ?? null },
  HSET: {
    min: 3,
    run: ([key, ...pairs], keys) => {
      if (pairs.length % 2 !== 0) throw new Refused(new ErrorReply("ERR wrong number of arguments for 'hset' command"));
      const map = hash(keys, key).value;
      let added = 0;
      for (let i = 0; i < pairs.length; i += 2) {
        if (!map.has(pairs[i])) added++;
        map.set(pairs[i], pairs[i + 1]);
      }
      return added;
    },
  },
  HSETNX: {
    min: 3,
    exact: true,
    run: ([key, field, value], keys) => {
      const map = hash(keys, key).value;
      if (map.has(field)) return 0;
      map.set(field, value);
      return 1;
    },
  },
  HDEL: {
    min: 2,
    run: ([key, ...fields], keys) => {
      const value = read(keys, key, 'hash');
      if (!value) return 0;
      const removed = fields.filter((field) => value.value.delete(field)).length;
      keys.dropIfEmpty(key, value);
      return removed;
    },
  },
  HINCRBY: {
    min: 3,
    exact: true,
    run: ([key, field, by], keys) => {
      const map = hash(keys, key).value;
      const current = map.get(field) ?? '0';
      const base = parseInteger(current);
      if (base === undefined) throw new Refused(new ErrorReply('ERR hash value is not an integer'));
      const next = base + integer(by);
      map.set(field, String(next));
      return next;
    },
  },
  HEXISTS: { min: 2, exact: true, run: ([key, field], keys) => (read(keys, key, 'hash')?.value.has(field) ? 1 : 0) },
  HMGET: {
    min: 2,
    run: ([key, ...fields], keys) => {
      const map = read(keys, key, 'hash')?.value;
      return fields.map((field) => map?.get(field) ?? null);
    },
  },
  HLEN: { min: 1, exact: true, run: ([key], keys) => read(keys, key, 'hash')?.value.size ?? 0 },
  HGETALL: { min: 1, exact: true, run: ([key], keys) => [...(read(keys, key, 'hash')?.value ?? [])].flat() },
  HKEYS: { min: 1, exact: true, run: ([key], keys) => [...(read(keys, key, 'hash')?.value.keys() ?? [])] },
  HVALS: { min: 1, exact: true, run: ([key], keys) => [...(read(keys, key, 'hash')?.value.values() ?? [])] },
  HRANDFIELD: {
    min: 1,
    run: ([key, count], keys) => {
      const fields = [...(read(keys, key, 'hash')?.value.keys() ?? [])];
      if (count === undefined) return fields.length === 0 ? null : fields[Math.floor(Math.random() * fields.length)];
      const wanted = integer(count);
      return wanted >= 0 ? fields.slice(0, wanted) : fields.slice(0, 1);
    },
  },
  HSCAN: {
    min: 2,
    run: ([key, ...args], keys) => {
      const map = read(keys, key, 'hash')?.value ?? new Map<string, string>();
      return scan(
        args,
        map,
        () => [...map.keys()],
        (field) => map.has(field),
        (field) => [field, map.get(field)!],
      );
    },
  },
  // Lists
  RPUSH: {
    min: 2,
    run: ([key, ...values], keys) => {
      const items = list(keys, key).value;
      items.push(...values);
      return items.length;
    },
  },
  LPUSH: {
    min: 2,
    run: ([key, ...values], keys) => {
      const items = list(keys, key).value;
      items.unshift(...values.reverse());
      return items.length;
    },
  },
  LLEN: { min: 1, exact: true, run: ([key], keys) => read(keys, key, 'list')?.value.length ?? 0 },
  LINDEX: {
    min: 2,
    exact: true,
    run: ([key, index], keys) => {
      const items = read(keys, key, 'list')?.value ?? [];
      const at = integer(index);
      return items[at < 0 ? items.length + at : at] ?? null;
    },
  },
  LRANGE: {
    min: 3,
    exact: true,
    run: ([key, start, stop], keys) => {
      const items = read(keys, key, 'list')?.value ?? [];
      const bounds = range(integer(start), integer(stop), items.length);
      return bounds ? items.slice(bounds[0], bounds[1] + 1) : [];
    },
  },
  LTRIM: {
    min: 3,
    exact: true,
    run: ([key, start, stop], keys) => {
      const value = read(keys, key, 'list');
      if (!value) return OK;
      const bounds = range(integer(start), integer(stop), value.value.length);
      value.value = bounds ? value.value.slice(bounds[0], bounds[1] + 1) : [];
      keys.dropIfEmpty(key, value);
      return OK;
    },
  },
  LPOP: {
    min: 1,
    exact: true,
    run: ([key], keys) => {
      const value = read(keys, key, 'list');
      const item = value?.value.shift() ?? null;
      if (value) keys.dropIfEmpty(key, value);
      return item;
    },
  },
  RPOP: {
    min: 1,
    exact: true,
    run: ([key], keys) => {
      const value = read(keys, key, 'list');
      const item = value?.value.pop() ?? null;
      if (value) keys.dropIfEmpty(key, value);
      return item;
    },
  },
  // Sorted sets
  ZADD: { min: 3, run: zadd },
  ZREM: {
    min: 2,
    run: ([key, ...members], keys) => {
      const value = read(keys, key, 'zset');
      if (!value) return 0;
      const removed = members.filter((member) => value.value.remove(member)).length;
      keys.dropIfEmpty(key, value);
      return removed;
    },
  },
  ZSCORE: {
    min: 2,
    exact: true,
    run: ([key, member], keys) => {
      const score = read(keys, key, 'zset')?.value.score(member);
      return score === undefined ? null : formatScore(score);
    },
  },
  ZCARD: { min: 1, exact: true, run: ([key], keys) => read(keys, key, 'zset')?.value.size ?? 0 },
  ZCOUNT: {
    min: 3,
    exact: true,
    run: ([key, minText, maxText], keys) => {
      const set = read(keys, key, 'zset')?.value;
      if (!set) return 0;
      const min = scoreBound(minText);
      const max = scoreBound(maxText);
      return Math.max(0, set.pastAtOrBelow(max.value, max.exclusive) - set.firstAtOrAbove(min.value, min.exclusive));
    },
  },
  ZRANGE: { min: 3, run: (args, keys) => zrange(args, keys) },
  ZREVRANGE: { min: 3, run: (args, keys) => zrange(args, keys, true) },
  ZRANGEBYSCORE: { min: 3, run: (args, keys) => zrange(args, keys, false, true) },
  ZPOPMIN: {
    min: 1,
    run: ([key, count], keys) => {
      const value = read(keys, key, 'zset');
      if (!value) return [];
      const taken = value.value.slice(0, (count === undefined ? 1 : integer(count)) - 1);
      for (const { member } of taken) value.value.remove(member);
      keys.dropIfEmpty(key, value);
      return withScores(taken, true);
    },
  },
  ZSCAN: {
    min: 2,
    run: ([key, ...args], keys) => {
      const set = read(keys, key, 'zset')?.value;
      if (!set) return ['0', []];
      return scan(
        args,
        set,
        () => set.entries().map(({ member }) => member),
        (member) => set.score(member) !== undefined,
        (member) => [member, formatScore(set.score(member)!)],
      );
    },
  },
  // Sets (for tests that look at keys by hand)
  SADD: {
    min: 2,
    run: ([key, ...members], keys) => {
      const set = write(keys, key, 'set', () => ({ type: 'set', value: new Set() })).value;
      const before = set.size;
      for (const member of members) set.add(member);
      return set.size - before;
    },
  },
  SMEMBERS: { min: 1, exact: true, run: ([key], keys) => [...(read(keys, key, 'set')?.value ?? [])] },
  SCARD: { min: 1, exact: true, run: ([key], keys) => read(keys, key, 'set')?.value.size ?? 0 },
};
COMMANDS.UNLINK = COMMANDS.DEL;
COMMANDS.HMSET = {
  min: 3,
  run: (args, keys) => {
    COMMANDS.HSET.run(args, keys);
    return OK;
  },
};

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
