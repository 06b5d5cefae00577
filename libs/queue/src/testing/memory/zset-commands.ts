import type { Keyspace } from './keyspace';
import { ErrorReply, notFloat, syntaxError, type Reply } from './reply';
import type { ScoredMember } from './sorted-set';
import { formatScore, integer, parseScore, range, read, Refused, removeEach, zset, type Spec } from './data-values';
import { scan } from './scan';

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

/** Commands on sorted sets. */
export const ZSET_COMMANDS: Record<string, Spec> = {
  ZADD: { min: 3, run: zadd },
  ZREM: {
    min: 2,
    run: ([key, ...members], keys) => removeEach(keys, key, 'zset', members, (set, member) => set.remove(member)),
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
};
