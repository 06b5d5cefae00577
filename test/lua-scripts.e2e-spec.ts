import { DelayQueueStore } from '../libs/queue/src/delay-queue/delay-queue.store';
import { QueueKeys } from '../libs/queue/src/redis/keys';
import { loadScript } from '../libs/queue/src/redis/lua-loader';
import type { DelayQueueOptionsRules } from '../libs/queue/src/validation/queue-options';
import { SCRIPTS_DIR, SCRIPT_NAMES, Scripts } from '../libs/queue/src/redis/scripts';
import { pollUntil, rawClient, uniquePrefix } from './support/testing';

describe('Lua scripts', () => {
  it.each(SCRIPT_NAMES)('%s compiles on the server, its includes inlined', async (name) => {
    const redis = rawClient();
    try {
      const lua = loadScript(SCRIPTS_DIR, name);
      expect(await redis.script('LOAD', lua)).toMatch(/^[0-9a-f]{40}$/);
    } finally {
      redis.disconnect();
    }
  });
});

describe('Scripts.runAfterReads (reads and a script in one MULTI)', () => {
  it('reads the lists as the script saw them, and reloads a flushed script inside the transaction', async () => {
    const redis = rawClient();
    const scripts = new Scripts(redis);
    const prefix = uniquePrefix();
    const keys = [`${prefix}:{q:0}:ready`, `${prefix}:{q:0}:stats`, `${prefix}:{q:0}:lastPush`, `${prefix}:{q:0}:g:a`];
    const pushKeys = [...keys.slice(0, 3), `${prefix}:{q:0}:held`, keys[3]];
    try {
      await scripts.run('fixed-push', pushKeys, [100, 2, 0, 0, pushKeys[4].length - 1, '\n{"n":1}\n{"n":2}\n{"n":3}']);
      await redis.script('FLUSH');
      const { lists, result } = await scripts.runAfterReads<(string | number)[]>(
        'fixed-take',
        keys,
        [2, 0, 0, 1, 'a', 2],
        [{ key: keys[3], count: 2 }],
      );
      expect(lists).toEqual([
        [expect.stringMatching(/^\[\d{13},\{"n":1\}\]$/), expect.stringMatching(/^\[\d{13},\{"n":2\}\]$/)],
      ]);
      // Listed: 'a' (one message left, due after maxWait 0); then offset 0, expired 0, claimed 2.
      expect(result.slice(2)).toEqual([1, 'a', 0, 0, 2]);
      expect(await redis.lrange(keys[3], 0, -1)).toEqual([expect.stringContaining('{"n":3}')]);
    } finally {
      redis.disconnect();
    }
  });

  it('claims nothing from a read made only of expired entries, trims them all, and gives the fresh ones next', async () => {
    const redis = rawClient();
    const scripts = new Scripts(redis);
    const prefix = uniquePrefix();
    const keys = [`${prefix}:{q:0}:ready`, `${prefix}:{q:0}:stats`, `${prefix}:{q:0}:lastPush`, `${prefix}:{q:0}:g:a`];
    const pushKeys = [...keys.slice(0, 3), `${prefix}:{q:0}:held`, keys[3]];
    const serverMs = async () => {
      const [s, us] = await redis.time();
      return Number(s) * 1000 + Math.floor(Number(us) / 1000);
    };
    try {
      await scripts.run('fixed-push', pushKeys, [100, 2, 0, 0, pushKeys[4].length - 1, '\n1\n2\n3']);
      const pushedAt = await serverMs();
      await pollUntil(async () => (await serverMs()) > pushedAt + 60, 'the first entries to age past maxAgeMs');
      await scripts.run('fixed-push', pushKeys, [100, 2, 0, 0, pushKeys[4].length - 1, '4']);
      const take = () =>
        scripts.runAfterReads<(string | number)[]>(
          'fixed-take',
          keys,
          [2, 50, 0, 1, 'a', 2],
          [{ key: keys[3], count: 2 }],
        );
      const first = await take();
      // Three expired (more than the two read): offset clamped to the read, nothing claimed.
      expect(first.result.slice(-3)).toEqual([2, 3, 0]);
      const second = await take();
      expect(second.result.slice(-3)).toEqual([0, 0, 1]);
      expect(second.lists[0]).toEqual([expect.stringMatching(/,4\]$/)]);
      expect(await redis.hgetall(keys[1])).toMatchObject({ pushed: '4', expired: '3', delivered: '1', pending: '0' });
    } finally {
      redis.disconnect();
    }
  });
});

describe('scripts with the largest batches the library sends', () => {
  it('fixed-push takes 4,000 groups in one call, and delay-claim / delay-ack 3,000 tasks', async () => {
    const redis = rawClient();
    const scripts = new Scripts(redis);
    const prefix = uniquePrefix();
    const key = (kind: string) => `${prefix}:{q:0}:${kind}`;
    try {
      const groups = Array.from({ length: 4000 }, (_, i) => `g${i}`);
      const pushed = await scripts.run<number[]>(
        'fixed-push',
        [key('ready'), key('stats'), key('lastPush'), key('held'), ...groups.map((g) => key(`g:${g}`))],
        [1000, 128, 1000, 0, key('g:').length, ...groups.map(() => '{"n":1}')],
      );
      // Nothing evicted: the reply lists no group.
      expect(pushed).toHaveLength(2);
      expect(await redis.zrange(key('lastPush'), 0, -1)).toEqual(expect.arrayContaining(['g0', 'g3999']));
      expect(await redis.zcard(key('lastPush'))).toBe(4000);
      expect(await redis.zcard(key('ready'))).toBe(4000);

      const delayKeys = ['due', 'active', 'data', 'dead', 'stats', 'errors', 'runs'].map(
        (kind) => `${prefix}:{d:0}:${kind}`,
      );
      const ids = Array.from({ length: 3000 }, (_, i) => `t${i}`);
      await scripts.run(
        'delay-schedule',
        delayKeys,
        ids.flatMap((id) => [id, '{}', 'in', 0, '1']),
      );
      const claimed = await scripts.run<(string | number)[]>('delay-claim', delayKeys, [
        3000,
        30_000,
        5,
        100,
        'token-1',
      ]);
      expect((claimed.length - 2) / 5).toBe(3000);
      const deliveries = ids.flatMap((id, i) => [id, String(claimed[2 + 5 * i + 2])]);
      const acked = await scripts.run<number[]>(
        'delay-ack',
        [delayKeys[0], delayKeys[1], delayKeys[2], delayKeys[4], delayKeys[5], delayKeys[6]],
        deliveries,
      );
      expect(acked.filter((ok) => ok === 1)).toHaveLength(3000);
      expect(await redis.hlen(delayKeys[2])).toBe(0);
      expect(await redis.hlen(delayKeys[6])).toBe(0);
    } finally {
      redis.disconnect();
    }
  });
});

describe('dead letters listed a page per script call', () => {
  it('lists them newest first, none twice and none missed, where a page ends among equal death times', async () => {
    const redis = rawClient();
    const keys = new QueueKeys(uniquePrefix(), 'd', 1);
    const store = new DelayQueueStore(new Scripts(redis), keys, { shards: 1 } as unknown as DelayQueueOptionsRules);
    try {
      // 150 tasks died in each of three milliseconds: pages of 200 end inside a millisecond.
      const pipeline = redis.pipeline();
      for (let i = 0; i < 450; i++) {
        pipeline.zadd(keys.key(0, 'dead'), 1_700_000_000_000 + Math.floor(i / 150), `t${i}`);
        pipeline.hset(keys.key(0, 'data'), `t${i}`, `{"i":${i}}`);
        pipeline.hset(keys.key(0, 'runs'), `t${i}`, `2:tok:1700000000000`);
      }
      await pipeline.exec();
      const newestFirst = await redis.zrange(keys.key(0, 'dead'), '+inf', '-inf', 'BYSCORE', 'REV');
      expect((await store.dead(0, 10_000)).map((task) => task.id)).toEqual(newestFirst);
      expect((await store.dead(0, 350)).map((task) => task.id)).toEqual(newestFirst.slice(0, 350));
      expect((await store.dead(0, 1))[0]).toMatchObject({ id: newestFirst[0], attempts: 2, json: '{"i":449}' });
    } finally {
      redis.disconnect();
    }
  });
});
