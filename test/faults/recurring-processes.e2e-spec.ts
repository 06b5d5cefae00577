import type IORedis from 'ioredis';
import { pollUntil, rawClient, uniquePrefix } from '@test/support/testing';
import { useWorkerProcesses } from '@test/support/worker-processes';

const EVERY_MS = 200;

interface Run {
  occurrence: number;
  attempt: number;
  pid: number;
  startedAt: number;
  endedAt?: number;
}

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

describe('@Recurring across processes', () => {
  const workers = useWorkerProcesses();
  let redis: IORedis;

  beforeAll(() => {
    redis = rawClient();
  });
  afterAll(async () => {
    await redis.quit();
  });

  const spawnWorker = (env: NodeJS.ProcessEnv) => workers.spawn('recurring-worker.js', env);

  function setup(label: string, extra: NodeJS.ProcessEnv = {}) {
    const prefix = uniquePrefix(label);
    const logKey = `${prefix}-log`;
    const env = workers.env({ PREFIX: prefix, LOG_KEY: logKey, EVERY_MS: String(EVERY_MS), ...extra });
    /** Every run, by occurrence and attempt, with the process that ran it and when. */
    const runs = async (): Promise<Run[]> => {
      const byKey = new Map<string, Run>();
      for (const line of await redis.lrange(logKey, 0, -1)) {
        if (line.startsWith('boot|')) continue;
        const [what, occurrence, attempt, pid, at] = line.split('|');
        const key = `${occurrence}|${attempt}|${pid}`;
        if (what === 'start') byKey.set(key, { occurrence: +occurrence, attempt: +attempt, pid: +pid, startedAt: +at });
        else byKey.get(key)!.endedAt = +at;
      }
      return [...byKey.values()];
    };
    /** When the latest process to start began (before it could claim anything). */
    const bootedAt = async () => {
      const boots = (await redis.lrange(logKey, 0, -1)).filter((line) => line.startsWith('boot|'));
      return Number(boots[boots.length - 1].split('|')[1]);
    };
    return { prefix, env, runs, bootedAt };
  }

  it('runs every tick exactly once across three processes, and takes over the tick of one killed mid-run', async () => {
    const { env, runs } = setup('rec3', { WORK_MS: '80' });
    const workers = await Promise.all(Array.from({ length: 3 }, () => spawnWorker(env)));
    await pollUntil(async () => (await runs()).filter((run) => run.endedAt).length >= 32, '32 ticks', 20_000);
    const before = await runs();
    const ticks = before.map((run) => run.occurrence).sort((a, b) => a - b);
    // Exactly once, none skipped.
    expect(new Set(ticks).size).toBe(ticks.length);
    expect(ticks).toEqual(ticks.map((_, i) => ticks[0] + i * EVERY_MS));
    expect(before.every((run) => run.attempt === 1)).toBe(true);

    // Kill the process running a tick, while it runs it.
    const running = await pollUntil(async () => (await runs()).find((run) => run.endedAt === undefined), 'a run');
    const victim = workers.find((worker) => worker.pid === running.pid)!;
    victim.kill('SIGKILL');
    const retried = await pollUntil(
      async () =>
        (await runs()).find((run) => run.occurrence === running.occurrence && run.attempt === 2 && run.endedAt),
      'the retry of the killed tick',
      10_000,
    );
    expect(retried.pid).not.toBe(running.pid);
    await pollUntil(
      async () => (await runs()).filter((run) => run.occurrence > retried.occurrence && run.endedAt).length >= 8,
      'ticks after the takeover',
      10_000,
    );
    const all = (await runs()).filter((run) => run.pid !== running.pid || run.occurrence !== running.occurrence);
    // Never two runs at once: sorted by start, each began after the previous ended.
    const ordered = all.filter((run) => run.endedAt).sort((a, b) => a.startedAt - b.startedAt);
    for (let i = 1; i < ordered.length; i++)
      expect(ordered[i].startedAt).toBeGreaterThanOrEqual(ordered[i - 1].endedAt!);
    // After the takeover (and the one latest tick missed meanwhile), ticks run on schedule again.
    const after = ordered.filter((run) => run.occurrence > retried.occurrence).map((run) => run.occurrence);
    const tail = after.slice(-6);
    expect(tail).toEqual(tail.map((_, i) => tail[0] + i * EVERY_MS));
    for (const run of ordered.filter((each) => each.occurrence >= tail[0]))
      expect(run.startedAt - run.occurrence).toBeLessThan(EVERY_MS);
  });

  it('leaves one pending occurrence when eight processes declare the schedule at once', async () => {
    // Eight, not more: each is a Node process starting Nest (seconds of CPU on a shared machine), and the
    // declarations race from the third one on; the recurring suite races twenty declarations in one process.
    const { prefix, env } = setup('rec8', { CONSUMERS: '0' });
    await Promise.all(Array.from({ length: 8 }, () => spawnWorker(env)));
    const tag = `${prefix}:{recurring.Job.tick:0}`;
    expect(await redis.zcard(`${tag}:due`)).toBe(1);
    expect(await redis.hkeys(`${tag}:repeats`)).toEqual(['Job.tick']);
    expect(await redis.hget(`${tag}:stats`, 'scheduled')).toBe('1');
  });

  it.each([['latest'], ['skip'], ['all']])(
    'with missed: %s, runs what fell due in ten ticks with no process',
    async (missed) => {
      const { env, runs, bootedAt } = setup(`rec-${missed}`, { MISSED: missed });
      const first = await spawnWorker(env);
      await pollUntil(async () => (await runs()).filter((run) => run.endedAt).length >= 3, 'three ticks');
      await workers.stop(first);
      // The pending tick: the one after the last that ran.
      const pending = Math.max(...(await runs()).map((run) => run.occurrence)) + EVERY_MS;
      await sleep(pending + 10 * EVERY_MS - Date.now());
      await spawnWorker(env);
      const booted = await bootedAt();
      await pollUntil(
        async () => (await runs()).some((run) => run.occurrence > booted + 2 * EVERY_MS && run.endedAt),
        'ticks on time after the restart',
      );
      const all = await runs();
      const ticks = all.map((run) => run.occurrence);
      expect(new Set(ticks).size).toBe(ticks.length);
      // Every tick in [pending, booted] fell due with no process running.
      const missedTicks = Math.floor((booted - pending) / EVERY_MS) + 1;
      expect(missedTicks).toBeGreaterThanOrEqual(10);
      const ran = (from: number, to: number) =>
        all.filter((run) => run.occurrence >= from && run.occurrence <= to).map((run) => run.occurrence);
      if (missed === 'all') {
        expect(ran(pending, booted)).toEqual(Array.from({ length: missedTicks }, (_, i) => pending + i * EVERY_MS));
      } else {
        // None of the older missed ticks runs: 'latest' runs the one due when the process claimed
        // (at or after `booted`), 'skip' none of them.
        expect(ran(pending, booted - EVERY_MS)).toEqual([]);
        if (missed === 'skip') expect(ran(pending, booted)).toEqual([]);
        else expect(ran(booted - EVERY_MS + 1, booted + EVERY_MS).length).toBeGreaterThanOrEqual(1);
      }
      // Then on schedule, each tick once.
      const after = ticks.filter((tick) => tick > booted).sort((a, b) => a - b);
      expect(after).toEqual(after.map((_, i) => after[0] + i * EVERY_MS));
    },
  );
});
