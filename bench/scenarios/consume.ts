import type { FixedQueueOptions } from 'nestjs-redis-queues';
import { batchConsumer, fixedQueueOf, LIBRARY, libraryApp } from '../contenders/library';
import { gameEvents, type GameEvent } from '../contenders/payloads';
import { SEED, seedClient } from '../contenders/seed';
import { interleave, scaled, type BenchContext, type Scenario } from '../harness/context';
import { Countdown, cpuMs, inParallel, now } from '../harness/load';
import { Recorder, type MetricSpec } from '../harness/results';
import type { BenchServer } from '../harness/servers';

const BATCH = 128;
/** The library's delivery modes, each its own contender: ordered at-most-once is the default. */
const ORDERED = `${LIBRARY} ordered`;
const UNORDERED = `${LIBRARY} unordered`;
const AT_LEAST_ONCE = `${LIBRARY} at-least-once`;
const RAW = `${LIBRARY} raw`;
const CAPACITY = 1000;
const CONCURRENCY = 16;
const DRAIN_TIMEOUT_MS = 120_000;

const THROUGHPUT: MetricSpec = { label: 'drain throughput', unit: 'msg/s', better: 'higher' };
const NODE_CPU: MetricSpec = { label: 'Node CPU per 100k msgs', unit: 'CPU ms', better: 'lower' };
const REDIS_CPU: MetricSpec = { label: 'Redis CPU per 100k msgs', unit: 'CPU ms', better: 'lower' };

export interface Fill {
  groups: number;
  perGroup: number;
}

/** Due as soon as it holds anything, so that no group waits out maxWaitMs: the seed's reader never waits either. */
const libraryQueue = { name: 'events', capacity: CAPACITY, batchSize: BATCH, maxWaitMs: 0 };

/** How each library contender's queue and consumer are set up. */
const MODES: Record<string, { queue: Partial<FixedQueueOptions>; raw: boolean; label: string }> = {
  [ORDERED]: { queue: {}, raw: false, label: `${LIBRARY} @BatchConsumer, ordered at-most-once (the default)` },
  [UNORDERED]: { queue: { ordered: false }, raw: false, label: `${LIBRARY} @BatchConsumer, ordered: false` },
  [AT_LEAST_ONCE]: {
    queue: { delivery: 'at-least-once' },
    raw: false,
    label: `${LIBRARY} @BatchConsumer, ordered at-least-once`,
  },
  [RAW]: { queue: {}, raw: true, label: `${LIBRARY} @BatchConsumer({ raw: true }), ordered at-most-once` },
};

/** Both contenders' queues take messages as one pipelined write per group: the fill is not measured. */
export async function fillLibrary(url: string, prefix: string, fill: Fill, events: GameEvent[]): Promise<void> {
  const app = await libraryApp({ url, prefix, fixed: libraryQueue });
  const queue = fixedQueueOf<GameEvent>(app, 'events');
  const messages = Array.from({ length: fill.perGroup }, (_, i) => events[i % events.length]);
  await inParallel(fill.groups, 64, (g) => queue.pushMany(`game-${g}`, messages));
  await app.close();
}

export const consumeScenario: Scenario = {
  name: 'consume',
  summary: 'FixedQueue consumer vs the seed lrange/ltrim reader, draining a pre-filled queue in batches of 128',
  async run(ctx: BenchContext) {
    const fill: Fill = { groups: Math.min(1000, scaled(ctx, 10_000, 4)), perGroup: scaled(ctx, 500, 1) };
    const total = fill.groups * fill.perGroup;
    const events = gameEvents(fill.perGroup);
    const recorder = new Recorder(
      'consume',
      `FixedQueue consume: drain ${total.toLocaleString('en')} messages (${fill.groups.toLocaleString('en')} groups × ${fill.perGroup.toLocaleString('en')}) in batches of ${BATCH}, ${CONCURRENCY} batches at once`,
      { ...fill, total, batch: BATCH, concurrency: CONCURRENCY, payloadBytes: JSON.stringify(events[0]).length },
    )
      .contender(ORDERED, MODES[ORDERED].label)
      .contender(UNORDERED, MODES[UNORDERED].label)
      .contender(AT_LEAST_ONCE, MODES[AT_LEAST_ONCE].label)
      .contender(RAW, MODES[RAW].label)
      .contender(SEED, 'seed: loop over every game, lrange/ltrim script')
      .ratio('ordered / unordered', THROUGHPUT, ORDERED, UNORDERED, { op: '>=', value: 0.9 })
      .ratio('at-least-once / unordered', THROUGHPUT, AT_LEAST_ONCE, UNORDERED, { op: '>=', value: 0.7 })
      .ratio('ordered / seed', THROUGHPUT, ORDERED, SEED)
      .check(`${ORDERED} drain throughput`, THROUGHPUT, ORDERED, { op: '>=', value: 1_000_000 })
      .check(`${RAW} drain throughput`, THROUGHPUT, RAW, { op: '>=', value: 1_000_000 });

    /** Fills a fresh server, then times `drain` from its first line to the last message handled. */
    const measure = async (
      contender: string,
      fill: Fill,
      record: boolean,
      prepare: (server: BenchServer) => Promise<void>,
      drain: (server: BenchServer, countdown: Countdown) => Promise<() => Promise<void>>,
    ) => {
      const total = fill.groups * fill.perGroup;
      const server = await ctx.servers.open();
      try {
        await prepare(server);
        const countdown = new Countdown(total);
        const redisBefore = await server.cpuMs();
        const cpu = process.cpuUsage();
        const started = now();
        const close = await drain(server, countdown);
        const drained = await countdown.within(DRAIN_TIMEOUT_MS, `${contender} drain`);
        const nodeCpu = cpuMs(cpu);
        const redisCpu = (await server.cpuMs()) - redisBefore;
        await close();
        if (countdown.count !== total)
          throw new Error(`${contender} delivered ${countdown.count} of ${total} messages`);
        if (!record) return;
        recorder.record(THROUGHPUT, contender, (total / (drained - started)) * 1000);
        recorder.record(NODE_CPU, contender, (nodeCpu * 100_000) / total);
        recorder.record(REDIS_CPU, contender, (redisCpu * 100_000) / total);
      } finally {
        await server.close();
      }
    };

    const library = (mode: string, fill: Fill, record: boolean) => {
      const prefix = ctx.prefix('consume');
      const { queue, raw } = MODES[mode];
      return measure(
        mode,
        fill,
        record,
        (server) => fillLibrary(server.url, prefix, fill, events),
        async (server, countdown) => {
          const consumer = batchConsumer<GameEvent>(
            'events',
            CONCURRENCY,
            (messages) => countdown.add(messages.length),
            raw,
          );
          const app = await libraryApp({
            url: server.url,
            prefix,
            fixed: { ...libraryQueue, ...queue },
            consumers: [consumer],
          });
          return () => app.close();
        },
      );
    };

    const seed = (fill: Fill, record: boolean) => {
      const prefix = ctx.prefix('seed');
      const games = `${prefix}:games`;
      const listKey = (game: string) => `${prefix}:list:${game}`;
      return measure(
        SEED,
        fill,
        record,
        async (server) => {
          const jsons = events.map((event) => JSON.stringify(event));
          for (let g = 0; g < fill.groups; g += 64) {
            const pipeline = server.admin.pipeline();
            for (let game = g; game < Math.min(fill.groups, g + 64); game++) {
              pipeline.rpush(listKey(`game-${game}`), ...jsons).sadd(games, `game-${game}`);
            }
            await pipeline.exec();
          }
        },
        async (server, countdown) => {
          const client = seedClient(server.url);
          // Consumer loops share one pass over the set of games that have data, as the seed's threads do.
          let pass: string[] = [];
          let next = 0;
          let listing: Promise<string[]> | undefined;
          const nextGame = async (): Promise<string | undefined> => {
            for (;;) {
              if (next < pass.length) return pass[next++];
              listing ??= client.smembers(games).then((members) => {
                pass = members;
                next = 0;
                listing = undefined;
                return members;
              });
              if ((await listing).length === 0) return undefined;
            }
          };
          const loop = async () => {
            for (let game = await nextGame(); game !== undefined; game = await nextGame()) {
              const items = await client.seedTake(listKey(game), games, game, BATCH);
              if (items.length > 0) countdown.add(items.map((item) => JSON.parse(item) as GameEvent).length);
            }
          };
          const loops = Promise.all(Array.from({ length: CONCURRENCY }, loop));
          return async () => {
            await loops;
            await client.quit();
          };
        },
      );
    };

    const warmupFill: Fill = { groups: Math.max(1, Math.round(fill.groups / 10)), perGroup: fill.perGroup };
    await interleave(ctx, [
      ...Object.keys(MODES).map((key) => ({
        key,
        round: (_: number, warmup: boolean) => library(key, warmup ? warmupFill : fill, !warmup),
      })),
      { key: SEED, round: (_, warmup) => seed(warmup ? warmupFill : fill, !warmup) },
    ]);
    recorder.note(
      'Timed from creating the consumer (a Nest application context for the library, an ioredis client for the seed) to the last message handled; ' +
        'the fill before it is not timed. The library and the seed parse every message from JSON; the raw consumer hands over the JSON text.',
    );
    return recorder.result();
  },
};
