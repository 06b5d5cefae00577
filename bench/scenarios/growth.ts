import type { INestApplicationContext } from '@nestjs/common';
import { batchConsumer, delayConsumer, delayQueueOf, fixedQueueOf, LIBRARY, libraryApp } from '../contenders/library';
import { gameEvents, type GameEvent } from '../contenders/payloads';
import { scaled, type BenchContext, type Scenario } from '../harness/context';
import { collectGarbage, Countdown, inParallel, now } from '../harness/load';
import { Recorder, type MetricSpec } from '../harness/results';
import { commandStats, type BenchServer } from '../harness/servers';
import type { DelayQueue } from 'nestjs-redis-queues';
import { median } from '../harness/stats';
import { DELAY_QUEUE, fire, leadFor, libraryContender, plan, type FeedTask } from './delay';

const BATCH = 128;
const CONCURRENCY = 16;
/** stats() calls timed one after another per round. */
const STATS_CALLS = 200;
const DRAIN_TIMEOUT_MS = 120_000;
/** Groups holding data that are not due within the measurement: a full hour before their partial batch is flushed. */
const fixedQueue = { name: 'events', capacity: 1000, batchSize: BATCH, maxWaitMs: 3_600_000 };

const CONSUME: MetricSpec = { label: 'consume throughput', unit: 'msg/s', better: 'higher' };
const SCHEDULE: MetricSpec = { label: 'schedule throughput', unit: 'task/s', better: 'higher' };
const FIRE: MetricSpec = { label: 'fire throughput', unit: 'task/s', better: 'higher' };
const STATS_CLIENT: MetricSpec = { label: 'stats() time, at the client', unit: 'ms', better: 'lower' };
const STATS_REDIS: MetricSpec = { label: 'stats() time, in Redis', unit: 'µs', better: 'lower' };

/** The longest single command (script or plain) of an operation, in Redis (SLOWLOG): what it blocks others for. */
const longest = (operation: string): MetricSpec => ({
  label: `${operation}: longest command in Redis`,
  unit: 'ms',
  better: 'lower',
});
/** Made once: results are kept per metric object. */
/** Made once: the recorder keeps each metric's figures by the metric object. */
const OPERATIONS = {
  fixed: ['pause()', 'resume()', 'isPaused()', 'groups() page of 100', 'peek(group, 100)'].map(longest),
  delay: [
    'pause()',
    'resume()',
    "list('scheduled') page of 500",
    "list('scheduled') 20th page of 500",
    'deadLetters() page of 500',
    'requeueAll()',
    'deleteDead()',
  ].map(longest),
};

/**
 * Runs `work` with every command logged (slowlog-log-slower-than 0) and returns the longest one's
 * duration in ms, as Redis measured it. Nothing else uses the server meanwhile.
 */
async function longestCommandMs(server: BenchServer, work: () => Promise<unknown>): Promise<number> {
  const { admin } = server;
  const [, threshold] = (await admin.config('GET', 'slowlog-log-slower-than')) as string[];
  await admin.config('SET', 'slowlog-max-len', '100000');
  await admin.config('SET', 'slowlog-log-slower-than', '0');
  await admin.slowlog('RESET');
  try {
    await work();
    const entries = (await admin.call('SLOWLOG', 'GET', '-1')) as [number, number, number, string[]][];
    // The admin connection's own SLOWLOG/CONFIG calls are listed too: they are not the operation's.
    const own = new Set(['slowlog', 'config']);
    return Math.max(0, ...entries.filter((e) => !own.has(String(e[3][0]).toLowerCase())).map((e) => e[2] / 1000));
  } finally {
    await admin.config('SET', 'slowlog-log-slower-than', threshold);
  }
}

const label = (n: number, what: string) => `${n.toLocaleString('en')} ${what}`;

/**
 * Times `stats` one call after another: at the client (round trips included), and inside Redis from
 * INFO commandstats, which nothing else touches meanwhile (the server's only client is idle).
 */
async function timeStats(
  server: BenchServer,
  stats: () => Promise<unknown>,
): Promise<{ clientMs: number; redisUs: number }> {
  const scripts = async () => {
    let usec = 0;
    for (const [name, stat] of commandStats(await server.info('commandstats')))
      if (name.startsWith('eval')) usec += stat.usec;
    return usec;
  };
  await stats();
  const before = await scripts();
  const times: number[] = [];
  for (let i = 0; i < STATS_CALLS; i++) {
    const started = now();
    await stats();
    times.push(now() - started);
  }
  return { clientMs: median(times), redisUs: ((await scripts()) - before) / STATS_CALLS };
}

interface Sized {
  key: string;
  server: BenchServer;
  prefix: string;
  producer: INestApplicationContext;
}

/** Opens a fresh server per size, fills each, runs `round` on every size in turn for each round, closes them. */
async function bySize(
  ctx: BenchContext,
  recorder: Recorder,
  sizes: { key: string; fill(sized: Omit<Sized, 'key'>): Promise<void> }[],
  round: (sized: Sized) => Promise<void>,
  open: (server: BenchServer, prefix: string) => Promise<INestApplicationContext>,
) {
  const opened: Sized[] = [];
  try {
    for (const size of sizes) {
      const server = await ctx.servers.open();
      const prefix = ctx.prefix('growth');
      const sized = { key: size.key, server, prefix, producer: await open(server, prefix) };
      opened.push(sized);
      ctx.log(`  filling: ${size.key}`);
      const started = now();
      await size.fill(sized);
      recorder.note(`Filling ${size.key} took ${((now() - started) / 1000).toFixed(1)} s (not measured).`);
    }
    for (let r = 1; r <= ctx.rounds; r++) {
      for (const sized of opened) {
        ctx.log(`  round ${r}/${ctx.rounds}: ${sized.key}`);
        collectGarbage();
        await round(sized);
      }
    }
  } finally {
    for (const { producer, server } of opened) {
      await producer.close();
      await server.close();
    }
  }
}

async function fixedGrowth(ctx: BenchContext) {
  const sizes = [scaled(ctx, 1_000, 10), scaled(ctx, 100_000, 100), scaled(ctx, 1_000_000, 1000)];
  const workGroups = Math.min(1000, sizes[0]);
  const perGroup = BATCH * Math.max(1, Math.round(2 * Math.min(1, ctx.scale)));
  const work = gameEvents(perGroup);
  const keys = sizes.map((n) => label(n, 'groups'));
  const recorder = new Recorder(
    'growth-fixed',
    `FixedQueue growth: drain ${label(workGroups * perGroup, 'messages')} (${label(workGroups, 'groups')} × ${perGroup}, batches of ${BATCH}) ` +
      `while other groups hold one message each, not yet due; stats() with that many groups`,
    { sizes, workGroups, perGroup, batch: BATCH, concurrency: CONCURRENCY, statsCalls: STATS_CALLS },
  );
  for (const key of keys) recorder.contender(key, key);
  const [smallest, largest] = [keys[0], keys[keys.length - 1]];
  recorder
    .ratio(`consume throughput, ${largest} / ${smallest}`, CONSUME, largest, smallest, { op: '>=', value: 0.8 })
    .ratio(`stats() in Redis, ${largest} / ${smallest}`, STATS_REDIS, largest, smallest, { op: '<=', value: 1.5 })
    .ratio(`stats() at the client, ${largest} / ${smallest}`, STATS_CLIENT, largest, smallest, {
      op: '<=',
      value: 1.5,
    });

  const tiny = { n: 0 };
  await bySize(
    ctx,
    recorder,
    sizes.map((n, i) => ({
      key: keys[i],
      async fill({ producer }) {
        const queue = fixedQueueOf<{ n: number }>(producer, 'events');
        await inParallel(n - workGroups, 5000, (g) => queue.push(`idle-${g}`, tiny));
      },
    })),
    async ({ key, server, prefix, producer }) => {
      const queue = fixedQueueOf<GameEvent>(producer, 'events');
      await inParallel(workGroups, 64, (g) => queue.pushMany(`work-${g}`, work));
      const stats = await timeStats(server, () => queue.stats());
      recorder.record(STATS_CLIENT, key, stats.clientMs);
      recorder.record(STATS_REDIS, key, stats.redisUs);
      const [pause, resume, isPaused, groups, peek] = OPERATIONS.fixed;
      recorder.record(pause, key, await longestCommandMs(server, () => queue.pause()));
      recorder.record(resume, key, await longestCommandMs(server, () => queue.resume()));
      recorder.record(isPaused, key, await longestCommandMs(server, () => queue.isPaused()));
      recorder.record(groups, key, await longestCommandMs(server, () => queue.groups({ limit: 100 })));
      recorder.record(peek, key, await longestCommandMs(server, () => queue.peek('work-0', 100)));

      const total = workGroups * perGroup;
      const countdown = new Countdown(total);
      const started = now();
      const consumer = await libraryApp({
        url: server.url,
        prefix,
        fixed: fixedQueue,
        consumers: [batchConsumer<GameEvent>('events', CONCURRENCY, (messages) => countdown.add(messages.length))],
      });
      try {
        const drained = await countdown.within(DRAIN_TIMEOUT_MS, `${key}: drain`);
        recorder.record(CONSUME, key, (total / (drained - started)) * 1000);
      } finally {
        await consumer.close();
      }
    },
    (server, prefix) => libraryApp({ url: server.url, prefix, fixed: fixedQueue }),
  );
  return recorder.result();
}

async function delayGrowth(ctx: BenchContext) {
  const sizes = [scaled(ctx, 10_000, 100), scaled(ctx, 1_000_000, 1000)];
  // Fired in well under a second: smaller batches make one scheduling hiccup a large share of the figure.
  const batch = scaled(ctx, 20_000, 50);
  const spreadMs = Math.max(1, Math.round(batch / 100));
  const keys = sizes.map((n) => label(n, 'pending'));
  const recorder = new Recorder(
    'growth-delay',
    `DelayQueue growth: schedule and fire ${label(batch, 'tasks')} due within ${spreadMs} ms while other tasks are pending a day ahead; stats() with that many tasks`,
    { sizes, batch, spreadMs, statsCalls: STATS_CALLS },
  );
  for (const key of keys) recorder.contender(key, key);
  const [smallest, largest] = [keys[0], keys[keys.length - 1]];
  recorder
    .ratio(`schedule throughput, ${largest} / ${smallest}`, SCHEDULE, largest, smallest, { op: '>=', value: 0.8 })
    .ratio(`fire throughput, ${largest} / ${smallest}`, FIRE, largest, smallest, { op: '>=', value: 0.8 })
    .ratio(`stats() in Redis, ${largest} / ${smallest}`, STATS_REDIS, largest, smallest, { op: '<=', value: 1.5 })
    .ratio(`stats() at the client, ${largest} / ${smallest}`, STATS_CLIENT, largest, smallest, {
      op: '<=',
      value: 1.5,
    });

  const lastRate = new Map<string, number>();
  await bySize(
    ctx,
    recorder,
    sizes.map((n, i) => ({
      key: keys[i],
      async fill({ producer }) {
        const queue = delayQueueOf<FeedTask>(producer, DELAY_QUEUE);
        const far = Date.now() + 86_400_000;
        const pending = plan(n, 'pending', (t) => far + t);
        const started = now();
        await inParallel(n, 2000, (t) =>
          queue.schedule(pending[t].payload, { id: pending[t].id, runAt: pending[t].payload.due }),
        );
        lastRate.set(keys[i], (n / (now() - started)) * 1000);
      },
    })),
    async ({ key, server, prefix, producer }) => {
      const queue = delayQueueOf<FeedTask>(producer, DELAY_QUEUE);
      const stats = await timeStats(server, () => queue.stats());
      recorder.record(STATS_CLIENT, key, stats.clientMs);
      recorder.record(STATS_REDIS, key, stats.redisUs);
      const outcome = await fire(server, prefix, libraryContender, {
        count: batch,
        leadMs: leadFor(ctx, batch, lastRate.get(key)!),
        offset: (t) => Math.floor((t * spreadMs) / batch),
      });
      lastRate.set(key, outcome.scheduleRate);
      await measureOperations(ctx, recorder, key, server, prefix, queue);
      if (outcome.overran)
        recorder.note(`${key}: in a round, scheduling outlasted its lead; that round's fire throughput includes it.`);
      recorder.record(SCHEDULE, key, outcome.scheduleRate);
      recorder.record(FIRE, key, outcome.fireRate);
    },
    (server, prefix) => libraryApp({ url: server.url, prefix, delay: { name: DELAY_QUEUE } }),
  );
  return recorder.result();
}

/**
 * The longest command of each inspection and clean-up operation beside this many pending tasks. Dead
 * letters come from a queue of their own on the same server (a consumer that always throws, one
 * attempt): the chunks' cost depends on the chunk, not on the tasks pending elsewhere.
 */
async function measureOperations(
  ctx: BenchContext,
  recorder: Recorder,
  key: string,
  server: BenchServer,
  prefix: string,
  queue: DelayQueue<FeedTask>,
) {
  const [pause, resume, firstPage, laterPage, deadPage, requeueAll, deleteDead] = OPERATIONS.delay;
  recorder.record(pause, key, await longestCommandMs(server, () => queue.pause()));
  recorder.record(resume, key, await longestCommandMs(server, () => queue.resume()));
  recorder.record(firstPage, key, await longestCommandMs(server, () => queue.list('scheduled', { limit: 500 })));
  let cursor: string | undefined;
  for (let page = 1; page < 20; page++)
    cursor = (await queue.list('scheduled', { cursor, limit: 500 })).cursor ?? undefined;
  recorder.record(
    laterPage,
    key,
    await longestCommandMs(server, () => queue.list('scheduled', { cursor, limit: 500 })),
  );

  const dead = scaled(ctx, 10_000, 100);
  const deadPrefix = `${prefix}-dead`;
  const kill = async () => {
    const killer = await libraryApp({
      url: server.url,
      prefix: deadPrefix,
      delay: { name: 'dies', maxAttempts: 1 },
      // Every task dies on purpose: an error line per dead task would be the scenario, not a fault.
      logLevels: ['fatal'],
      consumers: [
        delayConsumer('dies', 64, () => {
          throw new Error('always');
        }),
      ],
    });
    const dies = delayQueueOf(killer, 'dies');
    try {
      await inParallel(dead, 2000, (t) => dies.schedule({ t }, { id: `dead-${t}` }));
      for (let waited = 0; (await dies.stats()).dead < dead; waited += 50) {
        if (waited > DRAIN_TIMEOUT_MS) throw new Error(`${key}: ${dead} tasks did not die in time`);
        await new Promise((resolve) => setTimeout(resolve, 50));
      }
    } finally {
      await killer.close();
    }
  };
  const producer = await libraryApp({ url: server.url, prefix: deadPrefix, delay: { name: 'dies', maxAttempts: 1 } });
  try {
    const dies = delayQueueOf(producer, 'dies');
    await kill();
    recorder.record(deadPage, key, await longestCommandMs(server, () => dies.deadLetters({ limit: 500 })));
    recorder.record(requeueAll, key, await longestCommandMs(server, () => dies.requeueAll()));
    await kill();
    recorder.record(deleteDead, key, await longestCommandMs(server, () => dies.deleteDead()));
  } finally {
    await producer.close();
  }
  recorder.note(
    `${key}: requeueAll() and deleteDead() measured on ${label(dead, 'dead tasks')} beside the pending ones.`,
  );
}

export const growthScenario: Scenario = {
  name: 'growth',
  summary: `How ${LIBRARY} costs grow with groups holding data and with tasks pending`,
  async run(ctx: BenchContext) {
    return [await fixedGrowth(ctx), await delayGrowth(ctx)];
  },
};
