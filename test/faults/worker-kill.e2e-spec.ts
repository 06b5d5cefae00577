import { spawn, type ChildProcess } from 'node:child_process';
import { join } from 'node:path';
import type { INestApplication } from '@nestjs/common';
import type IORedis from 'ioredis';
import { DelayQueue, FixedQueue, getDelayQueueToken, getFixedQueueToken, QueueModule } from 'nestjs-redis-queues';
import { createApp, pollUntil, rawClient, redisUrl, uniquePrefix } from '@test/support/testing';
import { compileLibrary, libraryEnv } from '@test/support/compile-library';

// Waves of ~700 tasks: each kill lands 100-400 handler starts into one, while handlers run.
const TASKS = 5_000;
const WORKERS = 4;
const KILLS = 6;

/** A small seeded generator, so a failing run can be replayed with its seed. */
function random(seed: number): () => number {
  let state = seed >>> 0;
  return () => {
    state = (state + 0x6d2b79f5) >>> 0;
    let t = state;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

describe('workers SIGKILLed mid-handler (separate processes)', () => {
  let library: ReturnType<typeof compileLibrary>;
  let redis: IORedis;
  const apps: INestApplication[] = [];
  const children = new Set<ChildProcess>();

  beforeAll(() => {
    library = compileLibrary();
    redis = rawClient();
  });
  afterAll(async () => {
    for (const child of children) child.kill('SIGKILL');
    await Promise.all(apps.map((app) => app.close()));
    await redis.quit();
    library.remove();
  });

  function spawnWorker(env: NodeJS.ProcessEnv): Promise<ChildProcess> {
    const child = spawn(process.execPath, [join(__dirname, 'worker.js')], { env, stdio: ['pipe', 'pipe', 'inherit'] });
    children.add(child);
    child.once('exit', () => children.delete(child));
    return new Promise((resolve, reject) => {
      child.stdout!.once('data', () => resolve(child));
      child.once('exit', (code, signal) => reject(new Error(`worker exited before it was ready (${signal ?? code})`)));
    });
  }

  it('redelivers the tasks of killed workers to others: every task done, no attempt run twice', async () => {
    const seed = Number(process.env.FAULT_SEED ?? Date.now() % 1_000_000);
    const next = random(seed);
    const prefix = uniquePrefix('kill');
    const logKey = `${prefix}-log`;
    const app = await createApp({
      imports: [
        QueueModule.forRoot({ connection: redisUrl(), prefix, consumers: false }),
        QueueModule.registerDelayQueue({ name: 'jobs', shards: 8, leaseMs: 1000, maxAttempts: 1000 }),
      ],
    });
    apps.push(app);
    const jobs = app.get<DelayQueue<{ n: number }>>(getDelayQueueToken('jobs'));
    const env = { ...libraryEnv(library.dir), REDIS_URL: redisUrl(), PREFIX: prefix, LOG_KEY: logKey };
    await Promise.all(Array.from({ length: WORKERS }, () => spawnWorker(env)));

    // The tasks come in waves, one per kill, so that every kill lands while handlers are running.
    const wave = Math.ceil(TASKS / (KILLS + 1));
    const killed = new Set<number>();
    for (let from = 0; from < TASKS; from += wave) {
      const started = await redis.llen(logKey);
      const to = Math.min(TASKS, from + wave);
      await Promise.all(
        Array.from({ length: to - from }, (_, i) => jobs.schedule({ n: from + i }, { id: `job-${from + i}` })),
      );
      if (killed.size === KILLS) break;
      const wanted = started + 100 + Math.floor(next() * 300);
      await pollUntil(
        async () => (await redis.llen(logKey)) > wanted,
        `handlers to run before kill ${killed.size + 1}`,
        20_000,
      );
      const alive = [...children];
      const victim = alive[Math.floor(next() * alive.length)];
      killed.add(victim.pid!);
      victim.kill('SIGKILL');
      await spawnWorker(env);
    }
    expect(killed.size).toBe(KILLS);
    await pollUntil(
      async () => (await jobs.stats()).completed === TASKS,
      `all ${TASKS} tasks completed (seed ${seed})`,
      30_000,
    );

    const stats = await jobs.stats();
    expect(stats).toMatchObject({ scheduled: 0, active: 0, dead: 0, completed: TASKS });
    const starts = (await redis.lrange(logKey, 0, -1)).map((line) => {
      const [id, attempt, pid] = line.split('|');
      return { id, attempt: Number(attempt), pid: Number(pid) };
    });
    const byAttempt = new Map<string, number[]>();
    for (const { id, attempt, pid } of starts) {
      const key = `${id}#${attempt}`;
      byAttempt.set(key, [...(byAttempt.get(key) ?? []), pid]);
    }
    expect([...byAttempt].filter(([, pids]) => pids.length > 1)).toEqual([]);
    const handled = new Set(starts.map((s) => s.id));
    expect(Array.from({ length: TASKS }, (_, i) => `job-${i}`).filter((id) => !handled.has(id))).toEqual([]);

    // A task whose attempt ran in a killed process went to another process next time.
    const runs = new Map<string, { attempt: number; pid: number }[]>();
    for (const { id, attempt, pid } of starts) runs.set(id, [...(runs.get(id) ?? []), { attempt, pid }]);
    let redelivered = 0;
    for (const attempts of runs.values()) {
      attempts.sort((a, b) => a.attempt - b.attempt);
      for (let i = 1; i < attempts.length; i++) {
        redelivered++;
        if (killed.has(attempts[i - 1].pid)) expect(attempts[i].pid).not.toBe(attempts[i - 1].pid);
      }
    }
    expect(redelivered).toBeGreaterThan(0);
    process.stdout.write(
      `worker kills: ${TASKS} tasks, ${KILLS} workers SIGKILLed (seed ${seed}), ${starts.length} handler starts, ` +
        `${redelivered} redeliveries, ${stats.fired} claims, ${stats.retried} leases expired\n`,
    );
    await redis.del(logKey);
  }, 90_000);

  it('FixedQueue at-least-once: batches of killed or frozen workers go to others, in order, none lost', async () => {
    const seed = Number(process.env.FAULT_SEED ?? Date.now() % 1_000_000);
    const next = random(seed);
    const prefix = uniquePrefix('kill');
    const logKey = `${prefix}-log`;
    const options = { name: 'events', shards: 8, delivery: 'at-least-once' as const, batchSize: 20, maxWaitMs: 0 };
    const app = await createApp({
      imports: [
        QueueModule.forRoot({ connection: redisUrl(), prefix, consumers: false }),
        QueueModule.registerFixedQueue({ ...options, capacity: 100_000, leaseMs: 1000, maxAttempts: 1000 }),
      ],
    });
    apps.push(app);
    const events = app.get<FixedQueue<{ seq: number }>>(getFixedQueueToken('events'));
    const env = { ...libraryEnv(library.dir), REDIS_URL: redisUrl(), PREFIX: prefix, LOG_KEY: logKey, KIND: 'batch' };
    const workers = new Set(await Promise.all(Array.from({ length: WORKERS }, () => spawnWorker(env))));

    // Producers push while workers fail: each wave lands on 50 groups, then one worker is killed, or frozen
    // (SIGSTOP) until its leases ran out and were taken over, then resumed: its late acknowledgements
    // must remove nothing of the newer deliveries.
    const GROUPS = 50;
    const PER_WAVE = 40;
    const pushed = new Array<number>(GROUPS).fill(0);
    const killed = new Set<number>();
    const frozen = new Set<number>();
    for (let wave = 0; wave <= KILLS; wave++) {
      const started = await redis.llen(logKey);
      await Promise.all(
        Array.from({ length: GROUPS * PER_WAVE }, (_, i) => {
          const group = i % GROUPS;
          return events.push(`g${group}`, { seq: pushed[group]++ });
        }),
      );
      if (wave === KILLS) break;
      const wanted = started + 20 + Math.floor(next() * 60);
      await pollUntil(
        async () => (await redis.llen(logKey)) > wanted,
        `batches to start before kill ${wave + 1}`,
        20_000,
      );
      const alive = [...workers].filter((child) => !frozen.has(child.pid!));
      const victim = alive[Math.floor(next() * alive.length)];
      if (wave % 2 === 0) {
        killed.add(victim.pid!);
        workers.delete(victim);
        victim.kill('SIGKILL');
        workers.add(await spawnWorker(env));
      } else {
        frozen.add(victim.pid!);
        const { redelivered } = await events.stats();
        const until = Date.now() + 3_000;
        victim.kill('SIGSTOP');
        // Frozen until one of its leases was taken over (or three leases' time, if it held none).
        await pollUntil(
          async () => (await events.stats()).redelivered > redelivered || Date.now() > until,
          'a frozen lease taken over',
        );
        victim.kill('SIGCONT');
      }
    }
    const total = GROUPS * PER_WAVE * (KILLS + 1);
    const stats = await pollUntil(
      async () => {
        const now = await events.stats();
        return now.delivered === total && now.active === 0 ? now : undefined;
      },
      `all ${total} messages acknowledged (seed ${seed})`,
      30_000,
    );
    expect(stats).toMatchObject({ pushed: total, pending: 0, dropped: 0, expired: 0, dead: 0 });

    // Per group, deliveries in the order they started (one at a time: ordered).
    const deliveries = new Map<string, { attempt: number; pid: number; seqs: number[] }[]>();
    for (const line of await redis.lrange(logKey, 0, -1)) {
      const [group, attempt, pid, seqs] = line.split('|');
      const list = deliveries.get(group) ?? [];
      list.push({ attempt: Number(attempt), pid: Number(pid), seqs: seqs.split(',').map(Number) });
      deliveries.set(group, list);
    }
    let again = 0;
    for (let group = 0; group < GROUPS; group++) {
      const list = deliveries.get(`g${group}`) ?? [];
      // First deliveries follow push order, and every message was delivered.
      const firsts: number[] = [];
      const holder = new Map<number, number>();
      for (const { pid, seqs } of list) {
        for (const seq of seqs) {
          if (holder.has(seq)) {
            // Delivered again only because the process that had it died or froze before acknowledging.
            expect(killed.has(holder.get(seq)!) || frozen.has(holder.get(seq)!)).toBe(true);
            again++;
          } else {
            firsts.push(seq);
          }
          holder.set(seq, pid);
        }
      }
      expect(firsts).toEqual(Array.from({ length: pushed[group] }, (_, i) => i));
    }
    expect(again).toBeGreaterThan(0);
    process.stdout.write(
      `batch worker faults: ${total} messages over ${GROUPS} groups, ${killed.size} workers SIGKILLed, ` +
        `${frozen.size} frozen past their leases (seed ${seed}), ` +
        `${again} messages delivered again, ${stats.redelivered} counted redelivered\n`,
    );
    await redis.del(logKey);
  }, 90_000);
});
