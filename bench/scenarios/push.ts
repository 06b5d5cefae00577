import { fixedQueueOf, LIBRARY, libraryApp } from '../contenders/library';
import { gameEvents } from '../contenders/payloads';
import { SEED, seedClient } from '../contenders/seed';
import { interleave, scaled, type BenchContext, type Scenario } from '../harness/context';
import { cpuMs, inParallel, now } from '../harness/load';
import { findRedisBenchmark, redisBenchmark } from '../harness/redis-benchmark';
import { Recorder, type MetricSpec } from '../harness/results';
import type { BenchServer } from '../harness/servers';

interface Driver {
  start(): Promise<void>;
  close(): Promise<void>;
}

const GROUPS = 1000;
const CAPACITY = 1000;
/**
 * Pushes kept in flight, with the throughput targets against the seed (issue #16): what HTTP handlers
 * awaiting their push have in flight, as many as there are groups, and ten times more (more messages
 * per group per script call).
 */
const IN_FLIGHT = [256, 1000, 10_000];
const TARGET: Record<number, number> = { 256: 2, 1000: 3, 10_000: 4 };
/** Realistic traffic beside the uniform one: groups drawn with Zipf popularity, as games or devices are. */
const ZIPF = { groups: 10_000, s: 1.1, inFlight: [256, 1000] };
const TTL_MS = 86_400_000;
const RAW = 'redis-benchmark RPUSH -P 32';

const THROUGHPUT: MetricSpec = { label: 'push throughput', unit: 'msg/s', better: 'higher' };
const NODE_CPU: MetricSpec = { label: 'Node CPU per 100k msgs', unit: 'CPU ms', better: 'lower' };
const REDIS_CPU: MetricSpec = { label: 'Redis CPU per 100k msgs', unit: 'CPU ms', better: 'lower' };

export const pushScenario: Scenario = {
  name: 'push',
  summary: 'FixedQueue push vs the seed script per message vs raw pipelined RPUSH',
  async run(ctx: BenchContext) {
    const messages = scaled(ctx, 100_000, 100);
    // redis-benchmark times in whole milliseconds: too few requests and it reports an infinite rate.
    const rawMessages = Math.max(20_000, messages * 5);
    const events = gameEvents(GROUPS);
    const json = JSON.stringify(events[0]);
    const uniform = (i: number) => `game-${i % GROUPS}`;
    // Drawn once, so that every contender pushes the same sequence of groups.
    const zipfGroups = zipfSequence(messages, ZIPF.groups, ZIPF.s).map((g) => `game-${g}`);
    const zipf = (i: number) => zipfGroups[i % zipfGroups.length];
    const binary = findRedisBenchmark();
    const recorder = new Recorder(
      'push',
      `FixedQueue push: ${GROUPS.toLocaleString('en')} groups, ${json.length}-byte JSON, capacity ${CAPACITY.toLocaleString('en')}, from one process with N pushes in flight`,
      {
        messages,
        rawMessages,
        groups: GROUPS,
        capacity: CAPACITY,
        inFlight: IN_FLIGHT,
        payloadBytes: json.length,
        rawPipeline: 32,
        rawClients: 50,
      },
    );
    const key = (contender: string, inFlight: number, zipf = false) =>
      `${contender} N=${inFlight}${zipf ? ' zipf' : ''}`;
    const label = (inFlight: number, zipf: boolean) =>
      `N=${inFlight.toLocaleString('en')}${zipf ? `, Zipf over ${ZIPF.groups.toLocaleString('en')} groups` : ''}`;
    const cases = [
      ...IN_FLIGHT.map((inFlight) => ({ inFlight, zipf: false })),
      ...ZIPF.inFlight.map((inFlight) => ({ inFlight, zipf: true })),
    ];
    for (const { inFlight, zipf } of cases) {
      recorder.contender(key(LIBRARY, inFlight, zipf), `${LIBRARY}, ${label(inFlight, zipf)}`);
      recorder.contender(key(SEED, inFlight, zipf), `seed: EVALSHA per message, ${label(inFlight, zipf)}`);
    }
    recorder.contender(RAW, RAW);
    for (const { inFlight, zipf } of cases) {
      recorder.ratio(
        `${LIBRARY} / seed, ${label(inFlight, zipf)}`,
        THROUGHPUT,
        key(LIBRARY, inFlight, zipf),
        key(SEED, inFlight, zipf),
        zipf ? undefined : { op: '>=', value: TARGET[inFlight] },
      );
    }
    recorder.ratio(
      `${LIBRARY} / seed, Redis CPU per message, N=1,000`,
      REDIS_CPU,
      key(LIBRARY, 1000),
      key(SEED, 1000),
      { op: '<=', value: 0.5 },
    );
    for (const inFlight of ZIPF.inFlight) {
      recorder.ratio(
        `${LIBRARY} / seed, Redis CPU per message, ${label(inFlight, true)}`,
        REDIS_CPU,
        key(LIBRARY, inFlight, true),
        key(SEED, inFlight, true),
      );
    }
    for (const inFlight of IN_FLIGHT) {
      recorder.ratio(
        `${LIBRARY}, N=${inFlight.toLocaleString('en')} / raw RPUSH`,
        THROUGHPUT,
        key(LIBRARY, inFlight),
        RAW,
        { op: '>=', value: 0.3 },
      );
    }

    /** Runs a driver for `count` messages on a fresh server and records what it cost. */
    const measure = async (
      contender: string,
      count: number,
      record: boolean,
      open: (server: BenchServer) => Promise<Driver>,
    ) => {
      const server = await ctx.servers.open();
      try {
        const driver = await open(server);
        const redisBefore = await server.cpuMs();
        const cpu = process.cpuUsage();
        const started = now();
        await driver.start();
        const elapsed = now() - started;
        const nodeCpu = cpuMs(cpu);
        const redisCpu = (await server.cpuMs()) - redisBefore;
        await driver.close();
        if (!record) return;
        recorder.record(THROUGHPUT, contender, (count / elapsed) * 1000);
        if (contender !== RAW) recorder.record(NODE_CPU, contender, (nodeCpu * 100_000) / count);
        recorder.record(REDIS_CPU, contender, (redisCpu * 100_000) / count);
      } finally {
        await server.close();
      }
    };

    const library =
      (count: number, inFlight: number, group: (i: number) => string) =>
      async (server: BenchServer): Promise<Driver> => {
        const app = await libraryApp({
          url: server.url,
          prefix: ctx.prefix('push'),
          fixed: { name: 'events', capacity: CAPACITY, batchSize: 128, ttlMs: TTL_MS },
        });
        const queue = fixedQueueOf(app, 'events');
        return {
          start: () => inParallel(count, inFlight, (i) => queue.push(group(i), events[i % GROUPS])),
          close: () => app.close(),
        };
      };

    const seed =
      (count: number, inFlight: number, group: (i: number) => string) =>
      async (server: BenchServer): Promise<Driver> => {
        const client = seedClient(server.url);
        const prefix = ctx.prefix('seed');
        await client.ping();
        return {
          start: () =>
            inParallel(count, inFlight, (i) =>
              client.seedPush(`${prefix}:${group(i)}`, JSON.stringify(events[i % GROUPS]), CAPACITY, TTL_MS / 1000),
            ),
          close: async () => void (await client.quit()),
        };
      };

    const raw =
      (count: number) =>
      async (server: BenchServer): Promise<Driver> => ({
        start: async () => {
          await redisBenchmark(binary!, server.url, [
            '-c',
            '50',
            '-P',
            '32',
            '-n',
            String(count),
            '-r',
            String(GROUPS),
            'RPUSH',
            `${ctx.prefix('raw')}:g:__rand_int__`,
            json,
          ]);
        },
        close: async () => undefined,
      });

    const size = (count: number, warmup: boolean) => (warmup ? Math.max(1, Math.round(count / 10)) : count);
    const contenders = cases.flatMap(({ inFlight, zipf: skewed }) => {
      const group = skewed ? zipf : uniform;
      return [
        {
          key: key(LIBRARY, inFlight, skewed),
          round: (_: number, w: boolean) =>
            measure(key(LIBRARY, inFlight, skewed), size(messages, w), !w, library(size(messages, w), inFlight, group)),
        },
        {
          key: key(SEED, inFlight, skewed),
          round: (_: number, w: boolean) =>
            measure(key(SEED, inFlight, skewed), size(messages, w), !w, seed(size(messages, w), inFlight, group)),
        },
      ];
    });
    if (binary) {
      contenders.push({ key: RAW, round: (_: number, w: boolean) => measure(RAW, rawMessages, !w, raw(rawMessages)) });
    } else {
      recorder.note(
        'redis-benchmark was not found, so the raw RPUSH limit is missing (Debian ships it in redis-tools).',
      );
    }
    await interleave(ctx, contenders);
    recorder.note(
      'N is the number of push calls kept in flight; the seed keeps the same N on an auto-pipelined ioredis client, as the library does. ' +
        `redis-benchmark runs 50 connections × 32 pipelined RPUSH of the same JSON to ${GROUPS.toLocaleString('en')} lists (no cap, no TTL, no index): the ceiling of one Redis. ` +
        `Zipf: groups drawn from ${ZIPF.groups.toLocaleString('en')} with weight 1 / rank^${ZIPF.s}, the same sequence for both contenders.`,
    );
    return recorder.result();
  },
};

/**
 * `count` group numbers below `groups` drawn with Zipf popularity (group k with weight 1 / (k + 1)^s),
 * from a fixed seed: the same sequence on every run.
 */
export function zipfSequence(count: number, groups: number, s: number): number[] {
  const cumulative = new Float64Array(groups);
  let total = 0;
  for (let k = 0; k < groups; k++) cumulative[k] = total += 1 / (k + 1) ** s;
  let state = 0x2545f491;
  const next = () => {
    // xorshift32: enough spread for a benchmark's traffic, and repeatable.
    state ^= state << 13;
    state ^= state >>> 17;
    state ^= state << 5;
    return (state >>> 0) / 4294967296;
  };
  return Array.from({ length: count }, () => {
    const target = next() * total;
    let lo = 0;
    let hi = groups - 1;
    while (lo < hi) {
      const mid = (lo + hi) >> 1;
      if (cumulative[mid] < target) lo = mid + 1;
      else hi = mid;
    }
    return lo;
  });
}
