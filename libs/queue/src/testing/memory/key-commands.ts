import { OK, Status } from './reply';
import { integer, read, write, type Spec } from './data-values';
import { globToRegExp, scan } from './scan';

/** Commands on keys, strings and sets (sets only for tests that look at keys by hand). */
export const KEY_COMMANDS: Record<string, Spec> = {
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
KEY_COMMANDS.UNLINK = KEY_COMMANDS.DEL;
