import { readdirSync } from 'node:fs';
import { DelayQueueStore } from '../../libs/queue/src/delay-queue/delay-queue.store';
import { QueueKeys } from '../../libs/queue/src/redis/keys';
import { delayAck } from '../../libs/queue/src/delay-queue/lua/delay-ack';
import { delayClaim } from '../../libs/queue/src/delay-queue/lua/delay-claim';
import { delaySchedule } from '../../libs/queue/src/delay-queue/lua/delay-schedule';
import { delayCancel } from '../../libs/queue/src/delay-queue/lua/delay-cancel';
import { delayMove } from '../../libs/queue/src/delay-queue/lua/delay-move';
import { LateTry, type CallKey } from '../../libs/queue/src/redis/call-keys';
import { fixedPush } from '../../libs/queue/src/fixed-queue/lua/fixed-push';
import {
  fixedClaimUnordered,
  type FixedClaimUnorderedInput,
} from '../../libs/queue/src/fixed-queue/lua/fixed-claim-unordered';
import { invoke, shardKeys } from '../../libs/queue/src/redis/script-protocol';
import { fixedShardKeys } from '../../libs/queue/src/fixed-queue/fixed-queue.keys';
import { FIXED_QUEUE_SCRIPTS } from '../../libs/queue/src/fixed-queue/lua/fixed-queue.scripts';
import { DELAY_QUEUE_SCRIPTS } from '../../libs/queue/src/delay-queue/lua/delay-queue.scripts';
import type { DelayQueueOptionsRules } from '../../libs/queue/src/validation/delay-queue-options';
import { Scripts } from '../../libs/queue/src/redis/scripts';
import { scriptLibrary } from '../../libs/queue/src/queue-scripts';
import { dumpsMatching, pollUntil, rawClient, uniquePrefix } from '@test/support/testing';

describe('Lua scripts', () => {
  const library = scriptLibrary();

  it('are all defined by the protocols of the sets the library holds', () => {
    const files = library.sets.flatMap(({ dir }) => readdirSync(dir).filter((file) => file.endsWith('.lua')));
    expect(
      library
        .names()
        .map((name) => `${name}.lua`)
        .sort(),
    ).toEqual(files.sort());
    expect(files.length).toBeGreaterThan(30);
  });

  it.each(library.names())('%s compiles on the server, its includes inlined', async (name) => {
    const redis = rawClient();
    try {
      expect(await redis.script('LOAD', library.text(name))).toMatch(/^[0-9a-f]{40}$/);
    } finally {
      redis.disconnect();
    }
  });
});

describe('fixed-claim-unordered through its protocol (the reads and the script in one MULTI)', () => {
  const push = (shard: ReturnType<typeof fixedShardKeys>, scripts: Scripts, messages: string[]) =>
    invoke(scripts, fixedPush, shard, {
      capacity: 100,
      batchSize: 2,
      maxWaitMs: 0,
      mode: '0',
      carrier: '',
      groups: [{ group: 'a', messages }],
    });
  const taking = (maxAgeMs: number): FixedClaimUnorderedInput => ({
    batchSize: 2,
    maxAgeMs,
    maxWaitMs: 0,
    limit: 1,
    candidates: ['a'],
    read: 2,
    raw: true,
  });

  it('reads the lists as the script saw them, and reloads a flushed script inside the transaction', async () => {
    const redis = rawClient();
    const scripts = new Scripts(redis).add(FIXED_QUEUE_SCRIPTS);
    const shard = fixedShardKeys(new QueueKeys(uniquePrefix(), 'q', 1), 0);
    try {
      await push(shard, scripts, ['{"n":1}', '{"n":2}', '{"n":3}']);
      await redis.script('FLUSH');
      const { reply, lists } = await invoke(scripts, fixedClaimUnordered, shard, taking(0));
      expect(lists).toEqual([
        [expect.stringMatching(/^\[\d{13},\{"n":1\}\]$/), expect.stringMatching(/^\[\d{13},\{"n":2\}\]$/)],
      ]);
      // 'a' is listed again: one message left, due after maxWait 0.
      expect(reply).toMatchObject({
        due: ['a'],
        batches: [{ group: 'a', expired: 0, messages: ['{"n":1}', '{"n":2}'], attempt: 1 }],
      });
      expect(await redis.lrange(shard.group('a'), 0, -1)).toEqual([expect.stringContaining('{"n":3}')]);
    } finally {
      redis.disconnect();
    }
  });

  it('claims nothing from a read made only of expired entries, trims them all, and gives the fresh ones next', async () => {
    const redis = rawClient();
    const scripts = new Scripts(redis).add(FIXED_QUEUE_SCRIPTS);
    const shard = fixedShardKeys(new QueueKeys(uniquePrefix(), 'q', 1), 0);
    const serverMs = async () => {
      const [s, us] = await redis.time();
      return Number(s) * 1000 + Math.floor(Number(us) / 1000);
    };
    try {
      await push(shard, scripts, ['1', '2', '3']);
      const pushedAt = await serverMs();
      await pollUntil(async () => (await serverMs()) > pushedAt + 60, 'the first entries to age past maxAgeMs');
      await push(shard, scripts, ['4']);
      // Three expired (more than the two read): nothing claimed.
      const first = await invoke(scripts, fixedClaimUnordered, shard, taking(50));
      expect(first.reply.batches).toEqual([{ group: 'a', expired: 3, messages: [], attempt: 0 }]);
      const second = await invoke(scripts, fixedClaimUnordered, shard, taking(50));
      expect(second.reply.batches).toEqual([{ group: 'a', expired: 0, messages: ['4'], attempt: 1 }]);
      expect(await redis.hgetall(shard.key('stats'))).toMatchObject({
        pushed: '4',
        expired: '3',
        delivered: '1',
        pending: '0',
      });
    } finally {
      redis.disconnect();
    }
  });
});

describe('scripts with the largest batches the library sends', () => {
  it('fixed-push takes 4,000 groups in one call, and delay-claim / delay-ack 3,000 tasks', async () => {
    const redis = rawClient();
    const scripts = new Scripts(redis).add(FIXED_QUEUE_SCRIPTS).add(DELAY_QUEUE_SCRIPTS);
    const prefix = uniquePrefix();
    const fixed = fixedShardKeys(new QueueKeys(prefix, 'q', 1), 0);
    const delay = shardKeys(new QueueKeys(prefix, 'd', 1), 0);
    try {
      const groups = Array.from({ length: 4000 }, (_, i) => ({ group: `g${i}`, messages: ['{"n":1}'] }));
      const pushed = await invoke(scripts, fixedPush, fixed, {
        capacity: 1000,
        batchSize: 128,
        maxWaitMs: 1000,
        mode: '0',
        carrier: '',
        groups,
      });
      expect(pushed.evicted.every((evicted) => evicted === 0)).toBe(true);
      expect(await redis.zrange(fixed.key('lastPush'), 0, -1)).toEqual(expect.arrayContaining(['g0', 'g3999']));
      expect(await redis.zcard(fixed.key('lastPush'))).toBe(4000);
      expect(await redis.zcard(fixed.key('ready'))).toBe(4000);

      const ids = Array.from({ length: 3000 }, (_, i) => `t${i}`);
      await invoke(scripts, delaySchedule, delay, {
        tasks: ids.map((id) => ({ id, json: '{}', time: ['in', 0] as ['in', number], onExists: 'replace' as const })),
      });
      const claimed = await invoke(scripts, delayClaim, delay, {
        limit: 3000,
        leaseMs: 30_000,
        maxAttempts: 5,
        deadCapacity: 100,
        token: 'token-1',
      });
      expect(claimed.tasks).toHaveLength(3000);
      const acked = await invoke(
        scripts,
        delayAck,
        delay,
        claimed.tasks.map(({ id, token }) => ({ id, token })),
      );
      expect(acked.filter(Boolean)).toHaveLength(3000);
      expect(await redis.hlen(delay.key('data'))).toBe(0);
      expect(await redis.hlen(delay.key('runs'))).toBe(0);
    } finally {
      redis.disconnect();
    }
  });
});

describe("a retried call's try that reaches Redis after the call's deadline", () => {
  const setup = async () => {
    const redis = rawClient();
    const scripts = new Scripts(redis).add(FIXED_QUEUE_SCRIPTS).add(DELAY_QUEUE_SCRIPTS);
    const prefix = uniquePrefix();
    const [seconds] = await redis.time();
    return {
      redis,
      scripts,
      prefix,
      fixed: fixedShardKeys(new QueueKeys(prefix, 'q', 1), 0),
      delay: shardKeys(new QueueKeys(prefix, 'd', 1), 0),
      serverNow: Number(seconds) * 1000,
    };
  };
  const push = (groups: { group: string; messages: string; call?: CallKey }[]) => ({
    capacity: 100,
    batchSize: 10,
    maxWaitMs: 0,
    mode: '2',
    carrier: '',
    groups,
  });

  it('writes nothing and answers late when Redis has no record of the call, for each kind of keyed write', async () => {
    const { redis, scripts, prefix, fixed, delay, serverNow } = await setup();
    const late = (name: string): CallKey => ({ name, windowMs: 10_000, deadline: serverNow - 1000 });
    try {
      await invoke(scripts, delaySchedule, delay, {
        tasks: [{ id: 'kept', json: '{"v":1}', time: ['in', 60_000], onExists: 'replace' }],
      });
      const before = await dumpsMatching(redis, `${prefix}:*`);

      const scheduled = await invoke(scripts, delaySchedule, delay, {
        tasks: [{ id: 'new', json: '{"v":2}', time: ['in', 0], onExists: 'replace', call: late('s') }],
      });
      expect(scheduled.results).toEqual([{ changed: false, late: true, runAt: 0 }]);
      await expect(
        invoke(scripts, delayMove, delay, { id: 'kept', mode: 'in', ms: 0, call: late('m') }),
      ).rejects.toThrow(LateTry);
      await expect(invoke(scripts, delayCancel, delay, { id: 'kept', call: late('c') })).rejects.toThrow(LateTry);
      expect(await dumpsMatching(redis, `${prefix}:*`)).toEqual(before);

      // A late visit among others in one call: only it is refused.
      const pushed = await invoke(
        scripts,
        fixedPush,
        fixed,
        push([
          { group: 'a', messages: '"x"', call: late('p') },
          { group: 'b', messages: '"y"' },
        ]),
      );
      expect(pushed.late).toEqual([0]);
      expect(await redis.llen(fixed.group('a'))).toBe(0);
      expect(await redis.llen(fixed.group('b'))).toBe(1);
    } finally {
      redis.disconnect();
    }
  });

  it("answers from the call's record after the deadline, and keeps the record until the deadline", async () => {
    const { redis, scripts, fixed, delay, serverNow } = await setup();
    const call = (name: string, deadline: number): CallKey => ({ name, windowMs: 1000, deadline });
    try {
      const first = await invoke(
        scripts,
        fixedPush,
        fixed,
        push([{ group: 'a', messages: '"x"', call: call('p', serverNow + 60_000) }]),
      );
      expect(first.late).toBeUndefined();
      // Kept until the deadline a minute away, not only for the 1 s window.
      expect(await redis.pttl(fixed.call('p'))).toBeGreaterThan(50_000);
      const again = await invoke(
        scripts,
        fixedPush,
        fixed,
        push([{ group: 'a', messages: '"x"', call: call('p', serverNow - 1000) }]),
      );
      expect(again.late).toBeUndefined();
      expect(await redis.llen(fixed.group('a'))).toBe(1);

      await invoke(scripts, delaySchedule, delay, {
        tasks: [
          { id: 't', json: '{}', time: ['in', 60_000], onExists: 'replace', call: call('s', serverNow + 60_000) },
        ],
      });
      const answered = await invoke(scripts, delaySchedule, delay, {
        tasks: [{ id: 't', json: '{}', time: ['in', 0], onExists: 'replace', call: call('s', serverNow - 1000) }],
      });
      expect(answered.results[0]).toMatchObject({
        changed: true,
        runAt: Number(await redis.zscore(delay.key('due'), 't')),
      });
      expect(answered.results[0].late).toBeUndefined();
    } finally {
      redis.disconnect();
    }
  });
});

describe('delay-claim when it takes as many tasks as it may', () => {
  it('answers when work falls due next, or now while more is due', async () => {
    const redis = rawClient();
    const scripts = new Scripts(redis).add(DELAY_QUEUE_SCRIPTS);
    const delay = shardKeys(new QueueKeys(uniquePrefix(), 'd', 1), 0);
    const claim = (token: string) =>
      invoke(scripts, delayClaim, delay, { limit: 1, leaseMs: 120_000, maxAttempts: 5, deadCapacity: 100, token });
    try {
      await invoke(scripts, delaySchedule, delay, {
        tasks: [
          { id: 'a', json: '{}', time: ['in', 0], onExists: 'replace' },
          { id: 'b', json: '{}', time: ['in', 0], onExists: 'replace' },
          { id: 'later', json: '{}', time: ['in', 60_000], onExists: 'replace' },
        ],
      });
      const first = await claim('token-1');
      expect(first.tasks).toHaveLength(1);
      expect(first.nextDueAt).toBeLessThanOrEqual(first.serverNow);
      // The last task due now taken: the answer is the next due time (sooner than the leases' ends), not now.
      const second = await claim('token-2');
      expect(second.tasks).toHaveLength(1);
      expect(second.nextDueAt).toBe(Number(await redis.zscore(delay.key('due'), 'later')));
      expect(second.nextDueAt).toBeGreaterThan(second.serverNow);
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
