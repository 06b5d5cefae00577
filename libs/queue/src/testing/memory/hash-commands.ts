import { ErrorReply, OK } from './reply';
import { hash, integer, parseInteger, read, Refused, removeEach, type Spec } from './data-values';
import { scan } from './scan';

/** Commands on hashes. */
export const HASH_COMMANDS: Record<string, Spec> = {
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
    run: ([key, ...fields], keys) => removeEach(keys, key, 'hash', fields, (map, field) => map.delete(field)),
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
};
HASH_COMMANDS.HMSET = {
  min: 3,
  run: (args, keys) => {
    HASH_COMMANDS.HSET.run(args, keys);
    return OK;
  },
};
