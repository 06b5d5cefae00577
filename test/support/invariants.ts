import type IORedis from 'ioredis';

/**
 * Reads a queue's keys straight from Redis and lists every broken invariant (an empty list when the
 * state is consistent). Independent of the library's code on purpose: it checks what the scripts
 * wrote, with its own reading of the layout documented in the README.
 */

async function scanKeys(redis: IORedis, match: string): Promise<string[]> {
  const keys: string[] = [];
  let cursor = '0';
  do {
    const [next, batch] = await redis.scan(cursor, 'MATCH', match, 'COUNT', 1000);
    keys.push(...batch);
    cursor = next;
  } while (cursor !== '0');
  return keys;
}

function isJson(text: string): boolean {
  try {
    JSON.parse(text);
    return true;
  } catch {
    return false;
  }
}

const sameSet = (a: Iterable<string>, b: Iterable<string>) => {
  const left = new Set(a);
  const right = new Set(b);
  return left.size === right.size && [...left].every((x) => right.has(x));
};

export interface FixedQueueShape {
  prefix: string;
  name: string;
  shards: number;
  capacity: number;
}

/** Lists are bounded and carry no TTL, the ready and last-push indexes cover them, counters match the data. */
export async function fixedQueueViolations(
  redis: IORedis,
  { prefix, name, shards, capacity }: FixedQueueShape,
): Promise<string[]> {
  const problems: string[] = [];
  for (let shard = 0; shard < shards; shard++) {
    const tag = `${prefix}:{${name}:${shard}}`;
    const listPrefix = `${tag}:g:`;
    const groups = new Map<string, number>();
    for (const key of await scanKeys(redis, `${listPrefix}*`)) {
      const group = key.slice(listPrefix.length);
      const entries = await redis.lrange(key, 0, -1);
      groups.set(group, entries.length);
      if (entries.length > capacity)
        problems.push(`shard ${shard}: group ${JSON.stringify(group)} holds ${entries.length} > capacity ${capacity}`);
      for (const entry of entries) {
        if (!/^\[\d{13},/.test(entry) || !isJson(entry))
          problems.push(`shard ${shard}: malformed entry ${JSON.stringify(entry.slice(0, 80))}`);
      }
      if ((await redis.pttl(key)) !== -1) problems.push(`shard ${shard}: group ${JSON.stringify(group)} has a TTL`);
    }
    const ready = await redis.zrange(`${tag}:ready`, 0, -1);
    const lastPush = new Set(await redis.zrange(`${tag}:lastPush`, 0, -1));
    if (!sameSet(ready, groups.keys())) {
      problems.push(
        `shard ${shard}: ready index ${JSON.stringify(ready.sort())} != groups with data ${JSON.stringify([...groups.keys()].sort())}`,
      );
    }
    // The expiry and obliterate find every list through the last-push index.
    for (const group of groups.keys()) {
      if (!lastPush.has(group))
        problems.push(`shard ${shard}: ${JSON.stringify(group)} has data but no last-push entry`);
    }
    const pending = Number((await redis.hget(`${tag}:stats`, 'pending')) ?? 0);
    const held = [...groups.values()].reduce((a, b) => a + b, 0);
    if (pending !== held) problems.push(`shard ${shard}: stats pending = ${pending} but the lists hold ${held}`);
  }
  return problems;
}

export interface DelayQueueShape {
  prefix: string;
  name: string;
  shards: number;
}

/**
 * Every task is in exactly one of due/active/dead and its payload is JSON; a task that was delivered
 * (active or dead always were) has a well-formed runs entry; nothing dangles.
 */
export async function delayQueueViolations(
  redis: IORedis,
  { prefix, name, shards }: DelayQueueShape,
): Promise<string[]> {
  const problems: string[] = [];
  for (let shard = 0; shard < shards; shard++) {
    const tag = `${prefix}:{${name}:${shard}}`;
    const [due, active, dead, data, errors, runs] = await Promise.all([
      redis.zrange(`${tag}:due`, 0, -1),
      redis.zrange(`${tag}:active`, 0, -1),
      redis.zrange(`${tag}:dead`, 0, -1),
      redis.hgetall(`${tag}:data`),
      redis.hkeys(`${tag}:errors`),
      redis.hgetall(`${tag}:runs`),
    ]);
    const where = new Map<string, string[]>();
    for (const [set, ids] of [
      ['due', due],
      ['active', active],
      ['dead', dead],
    ] as const) {
      for (const id of ids) {
        where.set(id, [...(where.get(id) ?? []), set]);
        if (!(id in data)) problems.push(`shard ${shard}: ${set} holds ${JSON.stringify(id)}, which has no data`);
        if (set !== 'due' && !(id in runs))
          problems.push(`shard ${shard}: ${set} holds ${JSON.stringify(id)}, which has no runs entry`);
      }
    }
    for (const [id, value] of Object.entries(data)) {
      const sets = where.get(id) ?? [];
      if (sets.length !== 1)
        problems.push(
          `shard ${shard}: task ${JSON.stringify(id)} is in ${sets.length ? sets.join(' and ') : 'no set'}`,
        );
      if (!isJson(value))
        problems.push(
          `shard ${shard}: the payload of ${JSON.stringify(id)} is not JSON: ${JSON.stringify(value.slice(0, 80))}`,
        );
    }
    for (const [id, run] of Object.entries(runs)) {
      if (!(id in data))
        problems.push(`shard ${shard}: a runs entry is kept for ${JSON.stringify(id)}, which has no data`);
      if (!/^[1-9]\d*:[\w-]+:\d+$/.test(run))
        problems.push(`shard ${shard}: malformed runs entry of ${JSON.stringify(id)}: ${JSON.stringify(run)}`);
    }
    for (const id of errors) {
      if (!(id in data)) problems.push(`shard ${shard}: an error is kept for ${JSON.stringify(id)}, which has no data`);
    }
  }
  return problems;
}
