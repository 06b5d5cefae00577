import { syntaxError, type Reply } from './reply';
import { integer, Refused } from './data-values';

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
export function scan(
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
