import type { FixedQueueOptions } from 'nestjs-redis-queues';
import { batchConsumer, fixedQueueOf, LIBRARY, libraryApp } from '../contenders/library';
import { interleave, scaled, type BenchContext, type Scenario } from '../harness/context';
import { Countdown, cpuMs, inParallel, now } from '../harness/load';
import { Recorder, type MetricSpec } from '../harness/results';
import type { BenchServer } from '../harness/servers';

const BATCH = 128;
const CONCURRENCY = 16;
const DRAIN_TIMEOUT_MS = 300_000;
/** Due as soon as it holds anything: no group waits out maxWaitMs. */
const QUEUE: FixedQueueOptions = { name: 'events', capacity: 1000, batchSize: BATCH, maxWaitMs: 0 };

const DRAIN: MetricSpec = { label: 'drain throughput', unit: 'msg/s', better: 'higher' };
const PUSH: MetricSpec = { label: 'push throughput', unit: 'msg/s', better: 'higher' };
const REDIS_CPU: MetricSpec = { label: 'Redis CPU per 100k msgs', unit: 'CPU ms', better: 'lower' };
const NODE_CPU: MetricSpec = { label: 'Node CPU per 100k msgs', unit: 'CPU ms', better: 'lower' };

interface Round {
  /** The queue's options besides QUEUE's. */
  queue: Partial<FixedQueueOptions>;
  groups: number;
  perGroup: number;
  /** Before the drain: what makes the contender differ (pauses), on the producer's queue. */
  prepare?: (queue: ReturnType<typeof fixedQueueOf<{ n: number }>>) => Promise<void>;
  /** Messages the drain must see: all but those held back. */
  expected: number;
  /** The handler: resolve, or throw for the groups it refuses. */
  handle?: (group: string) => void;
}

/**
 * Fills a fresh server (pushes timed), then drains it with one consumer app: push and drain throughput,
 * and the CPU each side spent per 100k messages drained.
 */
async function measure(ctx: BenchContext, round: Round) {
  const server: BenchServer = await ctx.servers.open();
  const prefix = ctx.prefix('groups');
  try {
    const fixed = { ...QUEUE, ...round.queue };
    const producer = await libraryApp({ url: server.url, prefix, fixed });
    const queue = fixedQueueOf<{ n: number }>(producer, 'events');
    const total = round.groups * round.perGroup;
    const pushStarted = now();
    await inParallel(total, 1000, (i) => queue.push(`g${i % round.groups}`, { n: i }));
    const pushMs = now() - pushStarted;
    await round.prepare?.(queue);
    await producer.close();

    const countdown = new Countdown(round.expected);
    const consumer = batchConsumer<{ n: number }>('events', CONCURRENCY, (messages, batch) => {
      round.handle?.(batch.group);
      countdown.add(messages.length);
    });
    const redisBefore = await server.cpuMs();
    const cpu = process.cpuUsage();
    const started = now();
    const app = await libraryApp({ url: server.url, prefix, fixed, consumers: [consumer] });
    try {
      const drained = await countdown.within(DRAIN_TIMEOUT_MS, 'drain');
      return {
        push: (total / pushMs) * 1000,
        drain: (round.expected / (drained - started)) * 1000,
        nodeCpu: (cpuMs(cpu) * 100_000) / round.expected,
        redisCpu: (((await server.cpuMs()) - redisBefore) * 100_000) / round.expected,
      };
    } finally {
      await app.close();
    }
  } finally {
    await server.close();
  }
}

/** Claims with a thousand paused groups among a million against none: paused groups are out of the ready index. */
async function pausedGroups(ctx: BenchContext) {
  const groups = scaled(ctx, 1_000_000, 50);
  const paused = Math.min(groups - 1, scaled(ctx, 1000, 2));
  const NONE = `${LIBRARY}, none paused`;
  const SOME = `${LIBRARY}, ${paused.toLocaleString('en')} paused`;
  const recorder = new Recorder(
    'groups-paused',
    `FixedQueue claims among ${groups.toLocaleString('en')} groups of one message, ${paused.toLocaleString('en')} of them paused or none; ${CONCURRENCY} batches at once`,
    { groups, paused, concurrency: CONCURRENCY },
  )
    .contender(NONE, 'no group paused')
    .contender(SOME, `${paused.toLocaleString('en')} groups paused (pauseGroup) before the drain, left out of it`)
    .ratio('drain, paused / none', DRAIN, SOME, NONE)
    .ratio('Redis CPU, paused / none', REDIS_CPU, SOME, NONE);
  const round = (some: boolean, scale: number): Round => {
    const fill = Math.max(paused + 1, Math.round(groups * scale));
    return {
      queue: {},
      groups: fill,
      perGroup: 1,
      expected: some ? fill - paused : fill,
      prepare: some
        ? (queue) => inParallel(paused, 100, (i) => queue.pauseGroup(`g${Math.floor((i * fill) / paused)}`))
        : undefined,
    };
  };
  await interleave(
    ctx,
    [NONE, SOME].map((key) => ({
      key,
      round: async (_: number, warmup: boolean) => {
        const figures = await measure(ctx, round(key === SOME, warmup ? 0.1 : 1));
        if (warmup) return;
        recorder.record(DRAIN, key, figures.drain);
        recorder.record(REDIS_CPU, key, figures.redisCpu);
      },
    })),
  );
  recorder.note('Drain: from creating the consumer to the last message of the groups not paused handled.');
  return recorder.result();
}

/** Pushes and claims with a groupRateLimit that never holds a group back, against none: what the windows cost. */
async function rateLimit(ctx: BenchContext) {
  const groups = Math.min(1000, scaled(ctx, 1000, 4));
  const perGroup = scaled(ctx, 500, 1);
  const UNSET = `${LIBRARY}, no groupRateLimit`;
  const SET = `${LIBRARY}, groupRateLimit`;
  const limit = { max: 1000, durationMs: 1000 };
  const recorder = new Recorder(
    'groups-rate',
    `FixedQueue push then drain of ${(groups * perGroup).toLocaleString('en')} messages (${groups.toLocaleString('en')} groups × ${perGroup.toLocaleString('en')}) in batches of ${BATCH}, with a groupRateLimit of ${limit.max} batches / ${limit.durationMs} ms (never reached) or none`,
    { groups, perGroup, batch: BATCH, concurrency: CONCURRENCY, limit },
  )
    .contender(UNSET, 'no groupRateLimit')
    .contender(SET, `groupRateLimit { max: ${limit.max}, durationMs: ${limit.durationMs} }`)
    .ratio('push, set / unset', PUSH, SET, UNSET)
    .ratio('drain, set / unset', DRAIN, SET, UNSET)
    .ratio('Redis CPU, set / unset', REDIS_CPU, SET, UNSET)
    .ratio('Node CPU, set / unset', NODE_CPU, SET, UNSET);
  await interleave(
    ctx,
    [UNSET, SET].map((key) => ({
      key,
      round: async (_: number, warmup: boolean) => {
        const fill = warmup ? Math.max(1, Math.round(groups / 10)) : groups;
        const figures = await measure(ctx, {
          queue: key === SET ? { groupRateLimit: limit } : {},
          groups: fill,
          perGroup,
          expected: fill * perGroup,
        });
        if (warmup) return;
        recorder.record(PUSH, key, figures.push);
        recorder.record(DRAIN, key, figures.drain);
        recorder.record(REDIS_CPU, key, figures.redisCpu);
        recorder.record(NODE_CPU, key, figures.nodeCpu);
      },
    })),
  );
  return recorder.result();
}

/** A group held by onExhausted 'pause-group' (its upstream refuses it) while the others drain, against none held. */
async function heldGroup(ctx: BenchContext) {
  const groups = Math.min(1000, scaled(ctx, 1000, 4));
  const perGroup = scaled(ctx, 500, 1);
  const HEALTHY = `${LIBRARY}, no group held`;
  const HELD = `${LIBRARY}, one group held`;
  const recorder = new Recorder(
    'groups-held',
    `FixedQueue at-least-once, onExhausted 'pause-group': ${groups.toLocaleString('en')} groups × ${perGroup.toLocaleString('en')} messages drained while one more group fails every attempt and is held, or none does`,
    { groups, perGroup, batch: BATCH, concurrency: CONCURRENCY, maxAttempts: 1 },
  )
    .contender(HEALTHY, 'every group handled')
    .contender(HELD, "one more group whose batches all fail, held by onExhausted 'pause-group'")
    .ratio('drain, held / none', DRAIN, HELD, HEALTHY)
    .ratio('Redis CPU, held / none', REDIS_CPU, HELD, HEALTHY);
  const queue: Partial<FixedQueueOptions> = {
    delivery: 'at-least-once',
    maxAttempts: 1,
    retryDelayMs: 0,
    onExhausted: 'pause-group',
  };
  await interleave(
    ctx,
    [HEALTHY, HELD].map((key) => ({
      key,
      round: async (_: number, warmup: boolean) => {
        const fill = warmup ? Math.max(1, Math.round(groups / 10)) : groups;
        // Held: one group more, g0, whose batch fails and holds it; the others are the same in both.
        const figures = await measure(ctx, {
          queue,
          groups: key === HELD ? fill + 1 : fill,
          perGroup,
          expected: fill * perGroup,
          handle:
            key === HELD
              ? (group) => {
                  if (group === 'g0') throw new Error('upstream refuses g0');
                }
              : undefined,
        });
        if (warmup) return;
        recorder.record(DRAIN, key, figures.drain);
        recorder.record(REDIS_CPU, key, figures.redisCpu);
      },
    })),
  );
  recorder.note(
    'Drain: the messages of the groups handled, over the time from creating the consumer to the last of them.',
  );
  return recorder.result();
}

export const groupsScenario: Scenario = {
  name: 'groups',
  summary:
    "FixedQueue per-group controls: paused groups among many, groupRateLimit's cost, a group held by pause-group",
  async run(ctx: BenchContext) {
    return [await pausedGroups(ctx), await rateLimit(ctx), await heldGroup(ctx)];
  },
};
