import { readFileSync } from 'node:fs';
import { Injectable, type INestApplication } from '@nestjs/common';
import IORedis from 'ioredis';
import {
  type DeadBatch,
  DelayQueue,
  FixedQueue,
  getDelayQueueToken,
  getFixedQueueToken,
  QueueInputError,
  QueueModule,
  TaskSource,
} from 'nestjs-redis-queues';
import { startRedis, type RedisServer } from '@test/support/faults';
import { createApp, uniquePrefix } from '@test/support/testing';

/**
 * Redis runs one script (or MULTI) at a time: a long one freezes every other client of the server.
 * The largest calls the API allows must each stay short (about 5 ms on a development machine; the
 * bound here is generous, for loaded CI machines). Durations are Redis' own (SLOWLOG), not the
 * client's; a MULTI's are the sum of the commands it ran (Redis logs each, not the EXEC).
 */
const BOUND_MS = 25;
const SHARDS = 2;
const DEAD_PER_SHARD = 10_000;

/** What the task source of the queue `sourced` lists: nothing at start-up, then what a test says. */
let sourcedRows = 0;
let sourcedIds = 's';

@Injectable()
class SourcedTasks {
  @TaskSource('sourced')
  *list() {
    for (let n = 0; n < sourcedRows; n++)
      yield { id: `${sourcedIds}-${n}`, delayMs: 3_600_000, payload: { n, pad: 'p'.repeat(200) } };
  }
}

describe('no script blocks Redis for long, whatever the call (SLOWLOG)', () => {
  let server: RedisServer;
  let redis: IORedis;
  let app: INestApplication;
  let events: FixedQueue<{ n: number }>;
  let tasks: DelayQueue<{ n: number }>;
  let trimmed: DelayQueue<{ n: number }>;
  let batches: FixedQueue<{ n: number; pad: string }>;
  let crowd: FixedQueue<{ n: number }>;
  let heavy: FixedQueue<{ n: number; pad: string }>;
  let hot: FixedQueue<{ n: number }>;
  const prefix = uniquePrefix();
  const longest: Record<string, number> = {};

  beforeAll(async () => {
    server = await startRedis();
    redis = new IORedis(server.url);
    // Every command: a MULTI's duration is the sum of its commands, short ones included.
    await redis.config('SET', 'slowlog-log-slower-than', '0');
    await redis.config('SET', 'slowlog-max-len', '100000');
    app = await createApp({
      imports: [
        QueueModule.forRoot({ connection: server.url, prefix, consumers: false }),
        QueueModule.registerFixedQueue({ name: 'events', shards: SHARDS }),
        QueueModule.registerDelayQueue({ name: 'tasks', shards: SHARDS, maxAttempts: 1 }),
        // Stored with the default capacity (10,000 dead letters), then started with 10.
        QueueModule.registerDelayQueue({ name: 'trimmed', shards: 1, maxAttempts: 1, deadLetter: { capacity: 10 } }),
        // The largest at-least-once batches: claimed in place, buried, re-queued whole.
        QueueModule.registerFixedQueue({
          name: 'batches',
          shards: 1,
          delivery: 'at-least-once',
          batchSize: 4000,
          capacity: 4000,
          maxWaitMs: 0,
          maxAttempts: 1,
        }),
        // A million groups due at once, polled by a consumer of concurrency 10,000.
        QueueModule.registerFixedQueue({ name: 'crowd', shards: 1, delivery: 'at-least-once' }),
        // Large at-least-once batches of large messages, many groups full at once.
        QueueModule.registerFixedQueue({
          name: 'heavy',
          shards: 1,
          delivery: 'at-least-once',
          batchSize: 4000,
          capacity: 4000,
          maxWaitMs: 0,
        }),
        // One unordered group holding far more than a poll of concurrency 1,000 could take.
        QueueModule.registerFixedQueue({ name: 'hot', shards: 1, ordered: false, capacity: 200_000 }),
        QueueModule.registerDelayQueue({ name: 'sourced', shards: 1 }),
      ],
      providers: [SourcedTasks],
    });
    events = app.get(getFixedQueueToken('events'));
    tasks = app.get(getDelayQueueToken('tasks'));
    trimmed = app.get(getDelayQueueToken('trimmed'));
    batches = app.get(getFixedQueueToken('batches'));
    crowd = app.get(getFixedQueueToken('crowd'));
    heavy = app.get(getFixedQueueToken('heavy'));
    hot = app.get(getFixedQueueToken('hot'));
  });

  afterAll(async () => {
    console.log(
      `longest script per operation (SLOWLOG, scaled to Redis' share of a core; ms): ${Object.entries(longest)
        .map(([operation, ms]) => `${operation} ${ms.toFixed(2)}`)
        .join(', ')}`,
    );
    await app.close();
    redis.disconnect();
    await server.stop();
  });

  /**
   * Runs `work` and records the longest script or MULTI Redis ran meanwhile. SLOWLOG counts wall
   * time, which on a busy machine includes the time the OS kept Redis waiting for a core: on a 2-core
   * CI machine running four suites, a 7 ms burial logged 30 ms. Where Linux tells how long Redis' main
   * thread was on a core and how long it waited for one (schedstat), the longest is scaled to the share
   * of core it got meanwhile. Work that can be repeated (`attempt` tells it which run it is; `prepare`,
   * run before each, makes what it uses up) is run again, up to three times, and the best run counts.
   * A script slow by itself is slow every time.
   */
  async function measure(
    operation: string,
    work: (attempt: number) => Promise<unknown>,
    repeatable = false,
    prepare?: () => Promise<unknown>,
  ) {
    let best = Infinity;
    for (let attempt = 0; attempt < (repeatable ? 3 : 1) && best >= BOUND_MS; attempt++) {
      await prepare?.();
      await redis.slowlog('RESET');
      const before = schedstat(server.pid);
      await work(attempt);
      const after = schedstat(server.pid);
      const entries = (await redis.call('SLOWLOG', 'GET', '-1')) as SlowlogEntry[];
      best = Math.min(best, Math.max(0, ...blocking(entries)) * shareOfCore(before, after));
    }
    longest[operation] = Math.min(longest[operation] ?? Infinity, best);
    return best;
  }

  /** Makes `count` groups of a shard due, the first `withMessages` of them with `perGroup` messages of `bytes` each. */
  async function load(queue: string, count: number, withMessages: number, perGroup: number, bytes: number) {
    const tag = `${prefix}:{${queue}:0}`;
    // One script per 100,000 groups: a million pushes, or a pipeline of them, would take minutes here.
    const lua = `
      local tag, from, to, withMessages, perGroup = KEYS[1], tonumber(ARGV[1]), tonumber(ARGV[2]), tonumber(ARGV[3]), tonumber(ARGV[4])
      local t = redis.call('TIME')
      local now = tonumber(t[1]) * 1000 - 1000
      local pad = string.rep('x', tonumber(ARGV[5]))
      local due, pushed = {}, {}
      for i = from, to - 1 do
        local group = 'g' .. i
        due[#due + 1] = now
        due[#due + 1] = group
        if i < withMessages then
          pushed[#pushed + 1] = now
          pushed[#pushed + 1] = group
          local entries = {}
          for n = 1, perGroup do
            entries[#entries + 1] = '[' .. now .. ',{"n":' .. n .. ',"pad":"' .. pad .. '"}]'
            if #entries == 1000 or n == perGroup then
              redis.call('RPUSH', tag .. ':g:' .. group, unpack(entries))
              entries = {}
            end
          end
        end
        if #due == 2000 or i == to - 1 then
          redis.call('ZADD', tag .. ':ready', unpack(due))
          due = {}
        end
        if #pushed == 2000 or (i == to - 1 and #pushed > 0) then
          redis.call('ZADD', tag .. ':lastPush', unpack(pushed))
          pushed = {}
        end
      end
      redis.call('HINCRBY', tag .. ':stats', 'pending', math.max(0, math.min(to, withMessages) - from) * perGroup)`;
    for (let from = 0; from < count; from += 100_000)
      await redis.eval(lua, 1, tag, from, Math.min(count, from + 100_000), withMessages, perGroup, bytes);
  }

  /** Writes dead letters straight into a shard, as years of failures would have left them. */
  async function bury(queue: string, shard: number, count: number, errorBytes: number): Promise<void> {
    const key = (kind: string) => `${prefix}:{${queue}:${shard}}:${kind}`;
    const error = 'e'.repeat(errorBytes);
    for (let from = 0; from < count; from += 1000) {
      const pipeline = redis.pipeline();
      for (let i = from; i < Math.min(count, from + 1000); i++) {
        const id = `dead-${shard}-${i}`;
        pipeline.zadd(key('dead'), 1_700_000_000_000 + i, id);
        pipeline.hset(key('data'), id, `{"n":${i}}`);
        pipeline.hset(key('errors'), id, error);
        pipeline.hset(key('runs'), id, `1:t${i}:1700000000000`);
      }
      await pipeline.exec();
    }
  }

  it('a burst of 32,000 pushes to 4,000 new groups', async () => {
    let bursts = 0;
    const ms = await measure(
      'push burst',
      (attempt) => {
        bursts++;
        return Promise.all(Array.from({ length: 32_000 }, (_, n) => events.push(`game-${attempt}-${n % 4000}`, { n })));
      },
      true,
    );
    expect((await events.stats()).pending).toBe(bursts * 32_000);
    expect(ms).toBeLessThan(BOUND_MS);
  });

  it('pushMany of the most messages one call takes', async () => {
    const ms = await measure('pushMany 4,000', () =>
      events.pushMany(
        'one-game',
        Array.from({ length: 4000 }, (_, n) => ({ n })),
      ),
    );
    expect(await events.size('one-game')).toBe(1000);
    expect(ms).toBeLessThan(BOUND_MS);
  });

  it('refuses, writing nothing, a pushMany too large for one short script', async () => {
    const messages = Array.from({ length: 3000 }, (_, n) => ({ n, pad: 'x'.repeat(400) }));
    await expect(events.pushMany('too-big', messages)).rejects.toThrow(QueueInputError);
    await expect(events.pushMany('too-big', messages)).rejects.toThrow(
      /at most 1048576 bytes .* got \d+; split the array/,
    );
    expect(await events.size('too-big')).toBe(0);
  });

  it('deadLetters of the largest limit, with 2 KB errors', async () => {
    for (let shard = 0; shard < SHARDS; shard++) await bury('tasks', shard, DEAD_PER_SHARD, 2048);
    let listed = 0;
    const ms = await measure(
      'deadLetters(10000)',
      async () => (listed = (await tasks.deadLetters(10_000)).length),
      true,
    );
    expect(listed).toBe(10_000);
    expect(ms).toBeLessThan(BOUND_MS);
  });

  it('a burial after deadLetter.capacity was lowered from 10,000 to 10', async () => {
    await bury('trimmed', 0, DEAD_PER_SHARD, 100);
    const ms = await measure('bury after capacity 10,000 -> 10', async () => {
      await trimmed.schedule({ n: 0 }, { id: 'doomed' });
      const [claimed] = (await trimmed.store.claim(0, 1)).tasks;
      expect(await trimmed.store.fail(0, claimed.id, claimed.token, 0, 'boom')).toMatchObject({ fate: 'dead' });
    });
    expect(ms).toBeLessThan(BOUND_MS);
    // The rest is trimmed by later burials, a bounded step each.
    const deadKey = `${prefix}:{trimmed:0}:dead`;
    expect(await redis.zcard(deadKey)).toBeGreaterThan(10);
    let burials = 1;
    while ((await redis.zcard(deadKey)) > 10 && burials < 50) {
      await trimmed.schedule({ n: burials }, { id: `doomed-${burials}` });
      const [claimed] = (await trimmed.store.claim(0, 1)).tasks;
      await trimmed.store.fail(0, claimed.id, claimed.token, 0, 'boom');
      burials++;
    }
    expect(await redis.zcard(deadKey)).toBe(10);
    expect(await redis.hlen(`${prefix}:{trimmed:0}:errors`)).toBe(10);
  });

  it('a task source of 20,000 rows restored, kept, and swept (half of them unlisted), in short calls', async () => {
    const sourced = app.get<DelayQueue>(getDelayQueueToken('sourced'));
    sourcedRows = 20_000;
    // Each attempt restores tasks of new ids; the sweep then cancels all but 10,000 of the last ones.
    const restore = await measure(
      'reconcile, restore',
      (attempt) => {
        sourcedIds = `r${attempt}`;
        return sourced.reconcile();
      },
      true,
    );
    const keep = await measure('reconcile, keep', () => sourced.reconcile(), true);
    sourcedRows = 10_000;
    const sweep = await measure('reconcile, sweep', () => sourced.reconcile({ sweep: true }));
    expect((await sourced.stats()).scheduled).toBe(10_000);
    expect(Math.max(restore, keep, sweep)).toBeLessThan(BOUND_MS);
  });

  it('a claim of 1,000 due tasks (in calls of at most 500)', async () => {
    for (let shard = 0; shard < SHARDS; shard++) await redis.del(`${prefix}:{tasks:${shard}}:dead`);
    // About 1,500 land in shard 0.
    await Promise.all(Array.from({ length: 3000 }, (_, n) => tasks.schedule({ n }, { id: `due-${n}` })));
    let claimed = 0;
    const ms = await measure('claim 1,000', async () => {
      for (let got = -1; claimed < 1000 && got !== 0; claimed += got)
        got = (await tasks.store.claim(0, 1000 - claimed)).tasks.length;
    });
    expect(claimed).toBe(1000);
    expect(ms).toBeLessThan(BOUND_MS);
  });

  it('the largest at-least-once batch (4,000 messages) claimed, buried, listed and re-queued', async () => {
    const pad = 'x'.repeat(80);
    for (let from = 0; from < 4000; from += 1000)
      await batches.pushMany(
        'big',
        Array.from({ length: 1000 }, (_, i) => ({ n: from + i, pad })),
      );
    const steps = ['claim', 'bury', 'deadLetters of', 'requeue'].map((step) => `${step} a batch of 4,000`);
    const slow = () => steps.some((step) => longest[step] >= BOUND_MS);
    // Each step runs once per round, and the re-queued batch is the next round's: a step the OS paused
    // Redis in (see measure) is measured again, up to three rounds, its best round counting. The first
    // burial on a fresh server also grows Lua's heap (about 20 ms here, later ones about 7).
    for (let round = 0; round < 3 && (round === 0 || slow()); round++) {
      let claimed: Awaited<ReturnType<typeof batches.store.take>>['batches'][number] | undefined;
      await measure(steps[0], async () => {
        for (let polls = 0; !claimed && polls < 3; polls++)
          [claimed] = (await batches.store.take(0, 1, ['big'])).batches;
      });
      expect(claimed?.messages).toHaveLength(4000);
      await measure(steps[1], () => batches.store.fail(0, { group: 'big', token: claimed!.token! }, 0, 'boom'));
      let dead: DeadBatch<{ n: number; pad: string }>[] = [];
      await measure(steps[2], async () => (dead = await batches.deadLetters(1)));
      expect(dead[0].messages).toHaveLength(4000);
      await measure(steps[3], () => batches.requeue(dead[0].id));
      expect(await batches.size('big')).toBe(4000);
    }
    for (const step of steps) expect(longest[step]).toBeLessThan(BOUND_MS);
  });

  it('claims at concurrency 10,000 with a million due groups (at-least-once), in short calls', async () => {
    await load('crowd', 1_000_000, 20_000, 2, 10);
    // What a consumer of concurrency 10,000 asks for: half its slots per poll, the groups the last poll listed.
    let claimed = 0;
    let polls = 0;
    const ms = await measure(
      'claim at concurrency 10,000, 1M due groups',
      async () => {
        let due: string[] = [];
        for (let poll = 0; poll < 20; poll++, polls++) {
          const outcome = await crowd.store.take(0, 5000, due);
          due = outcome.due;
          claimed += outcome.batches.length;
          // Always more due: the shard loop polls again at once.
          expect(outcome.nextDueAt).toBe(outcome.serverNow);
        }
      },
      true,
    );
    expect(claimed).toBeGreaterThan(polls);
    expect(ms).toBeLessThan(BOUND_MS);
    await redis.del(`${prefix}:{crowd:0}:ready`, `${prefix}:{crowd:0}:lastPush`);
  });

  it('claims and acknowledges 64 full groups of 4,000 1 KB messages (at-least-once), in short calls', async () => {
    await load('heavy', 64, 64, 4000, 1000);
    let deliveries: { group: string; token: string }[] = [];
    const claim = await measure(
      'claim 64 groups x 4,000 x 1 KB',
      async () => {
        // A run after the first gives back what the one before claimed: due again, not counted as attempts.
        if (deliveries.length > 0) await heavy.store.release(0, deliveries);
        deliveries = [];
        let due: string[] = [];
        for (let polls = 0; deliveries.length < 64 && polls < 1000; polls++) {
          const outcome = await heavy.store.take(0, 128, due);
          due = outcome.due;
          for (const { group, token } of outcome.batches) deliveries.push({ group, token: token! });
        }
      },
      true,
    );
    expect(deliveries).toHaveLength(64);
    const ack = await measure('acknowledge 64 batches of up to 4,000 x 1 KB', async () => {
      const { dueAt } = await heavy.store.ack(0, deliveries);
      expect(dueAt.every((due) => due !== null)).toBe(true);
    });
    for (const ms of [claim, ack]) expect(ms).toBeLessThan(BOUND_MS);
    await heavy.obliterate();
  });

  it('takes from an unordered hot group at concurrency 1,000, in short calls', async () => {
    await load('hot', 1, 1, 100_000, 60);
    let taken = 0;
    const ms = await measure(
      'take from a hot group at concurrency 1,000',
      async () => {
        for (let polls = 0; polls < 5; polls++) {
          const outcome = await hot.store.take(0, 500, ['g0']);
          taken += outcome.batches.reduce((sum, batch) => sum + batch.messages.length, 0);
        }
      },
      true,
    );
    expect(taken).toBeGreaterThan(0);
    expect(ms).toBeLessThan(BOUND_MS);
    await hot.obliterate();
  });

  it('acknowledges 1,000 delayed tasks in one call of the store', async () => {
    await Promise.all(Array.from({ length: 2000 }, (_, n) => tasks.schedule({ n }, { id: `acked-${n}` })));
    const claimed: { id: string; token: string }[] = [];
    for (let got = -1; claimed.length < 1000 && got !== 0;) {
      const { tasks: batch } = await tasks.store.claim(0, 1000 - claimed.length);
      got = batch.length;
      claimed.push(...batch.map(({ id, token }) => ({ id, token })));
    }
    expect(claimed).toHaveLength(1000);
    let acked: { completed: boolean }[] = [];
    const ms = await measure('acknowledge 1,000 tasks', async () => (acked = await tasks.store.ack(0, claimed)));
    expect(acked.every(({ completed }) => completed)).toBe(true);
    expect(ms).toBeLessThan(BOUND_MS);
  });

  it('obliterate of a FixedQueue of 10,000 groups and 20,000 dead batches, and of a DelayQueue with 20,000 dead letters', async () => {
    // Made again before each run of the measure: an obliterate is repeatable only on the data it wipes.
    const fill = async () => {
      await Promise.all(Array.from({ length: 40_000 }, (_, n) => events.push(`wiped-${n % 10_000}`, { n })));
      const entries = Array.from({ length: 20 }, (_, n) => `[1700000000000,{"n":${n},"pad":"${'p'.repeat(100)}"}]`);
      for (let shard = 0; shard < SHARDS; shard++) {
        const key = (kind: string) => `${prefix}:{events:${shard}}:${kind}`;
        for (let from = 0; from < DEAD_PER_SHARD; from += 1000) {
          const pipeline = redis.pipeline();
          for (let i = from; i < from + 1000; i++) {
            // As a burial writes it: a JSON header, then the entries one a line.
            const header = { group: `wiped-${i}`, attempts: 5, error: 'Error: boom', diedAt: 1_700_000_000_000 };
            const record = [JSON.stringify(header), ...entries].join('\n');
            pipeline.zadd(key('dead'), 1_700_000_000_000 + i, `${shard}.dead.${i}`);
            pipeline.hset(key('deadData'), `${shard}.dead.${i}`, record);
          }
          await pipeline.exec();
        }
        await bury('tasks', shard, DEAD_PER_SHARD, 2048);
      }
      expect(await redis.dbsize()).toBeGreaterThan(10_000);
    };
    const ms = await measure(
      'obliterate',
      async () => {
        await events.obliterate();
        await tasks.obliterate();
      },
      true,
      fill,
    );
    for (const queue of ['events', 'tasks']) expect(await redis.keys(`${prefix}:{${queue}[:}]*`)).toEqual([]);
    expect(ms).toBeLessThan(BOUND_MS);
  });
});

/** Nanoseconds a process' main thread has spent on a core and waiting for one; undefined off Linux. */
function schedstat(pid: number): { running: number; waiting: number } | undefined {
  try {
    const [running, waiting] = readFileSync(`/proc/${pid}/task/${pid}/schedstat`, 'utf8').split(' ').map(Number);
    return { running, waiting };
  } catch {
    return undefined;
  }
}

/** Of the time a thread could run between two readings, the share it ran: 1 when unknown. */
function shareOfCore(before: ReturnType<typeof schedstat>, after: ReturnType<typeof schedstat>): number {
  if (!before || !after) return 1;
  const running = after.running - before.running;
  const waiting = after.waiting - before.waiting;
  return running + waiting > 0 ? running / (running + waiting) : 1;
}

/** A SLOWLOG entry: id, unix time, microseconds, the command and its arguments, client address, client name. */
type SlowlogEntry = [number, number, number, string[], string, string];

/**
 * How long each script, MULTI or UNLINK (the one plain command that deletes a whole shard's keys:
 * DelayQueue.obliterate) kept Redis from other clients, in ms. The commands of a MULTI run together
 * at its EXEC, so they follow its MULTI entry in the log, one after the other, from its client.
 */
function blocking(entries: SlowlogEntry[]): number[] {
  const spans: number[] = [];
  let multi: { client: string; micros: number } | undefined;
  for (const [, , micros, [command], client] of [...entries].sort((a, b) => a[0] - b[0])) {
    const name = command.toLowerCase();
    if (multi && client === multi.client && /^(lrange|eval)/.test(name)) {
      multi.micros += micros;
      continue;
    }
    // Another client's command before the EXEC ran: the MULTI is still being queued.
    const queueing = multi !== undefined && client !== multi.client && multi.micros === 0;
    if (multi && !queueing) {
      spans.push(multi.micros / 1000);
      multi = undefined;
    }
    if (name === 'multi') multi = { client, micros: 0 };
    else if (/^(eval|unlink)/.test(name)) spans.push(micros / 1000);
  }
  if (multi) spans.push(multi.micros / 1000);
  return spans;
}
