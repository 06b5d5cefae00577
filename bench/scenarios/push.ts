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
/** Pushes kept in flight: as many as there are groups, and ten times more (more messages per group per script call). */
const IN_FLIGHT = [1000, 10_000];
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
    const group = (i: number) => `game-${i % GROUPS}`;
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
    const key = (contender: string, inFlight: number) => `${contender} N=${inFlight}`;
    for (const inFlight of IN_FLIGHT) {
      recorder.contender(key(LIBRARY, inFlight), `${LIBRARY}, N=${inFlight.toLocaleString('en')}`);
      recorder.contender(key(SEED, inFlight), `seed: EVALSHA per message, N=${inFlight.toLocaleString('en')}`);
    }
    recorder.contender(RAW, RAW);
    for (const inFlight of IN_FLIGHT) {
      recorder.ratio(
        `${LIBRARY} / seed, N=${inFlight.toLocaleString('en')}`,
        THROUGHPUT,
        key(LIBRARY, inFlight),
        key(SEED, inFlight),
        { op: '>=', value: 5 },
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
      (count: number, inFlight: number) =>
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
      (count: number, inFlight: number) =>
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
    const contenders = IN_FLIGHT.flatMap((inFlight) => [
      {
        key: key(LIBRARY, inFlight),
        round: (_: number, w: boolean) =>
          measure(key(LIBRARY, inFlight), size(messages, w), !w, library(size(messages, w), inFlight)),
      },
      {
        key: key(SEED, inFlight),
        round: (_: number, w: boolean) =>
          measure(key(SEED, inFlight), size(messages, w), !w, seed(size(messages, w), inFlight)),
      },
    ]);
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
        `redis-benchmark runs 50 connections × 32 pipelined RPUSH of the same JSON to ${GROUPS.toLocaleString('en')} lists (no cap, no TTL, no index): the ceiling of one Redis.`,
    );
    return recorder.result();
  },
};
