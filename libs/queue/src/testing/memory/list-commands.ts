import type { Keyspace } from './keyspace';
import { OK } from './reply';
import { integer, list, range, read, type Spec } from './data-values';

/** Takes an item off the list at `key` with `take`, dropping the key once empty: the item, or null. */
function pop(keys: Keyspace, key: string, take: (items: string[]) => string | undefined): string | null {
  const value = read(keys, key, 'list');
  if (!value) return null;
  const item = take(value.value) ?? null;
  keys.dropIfEmpty(key, value);
  return item;
}

/** Commands on lists. */
export const LIST_COMMANDS: Record<string, Spec> = {
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
  LPOP: { min: 1, exact: true, run: ([key], keys) => pop(keys, key, (items) => items.shift()) },
  RPOP: { min: 1, exact: true, run: ([key], keys) => pop(keys, key, (items) => items.pop()) },
};
