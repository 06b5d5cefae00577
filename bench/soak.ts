import type { INestApplicationContext } from '@nestjs/common';
import type { DelayQueue, FixedQueue } from 'nestjs-redis-queues';
import { batchConsumer, delayConsumer, delayQueueOf, fixedQueueOf, libraryApp } from './contenders/library';
import { gameEvents, type GameEvent } from './contenders/payloads';
import { positiveEnv } from './harness/env';
import { collectGarbage, sleep } from './harness/load';
import { Servers, infoNumber, type BenchServer } from './harness/servers';
import { median, quantile } from './harness/stats';

/**
 * `npm run soak`: one application producing and consuming both queues at a steady rate for a while
 * (SOAK_SECONDS, default 60), sampled every few seconds. Calibrates first: both queues flat out for a
 * few seconds, then the soak runs at SOAK_LOAD (default 0.8) of the rates the consumers kept up with.
 * Passes when throughput, Node heap and Redis memory stay flat and every message and task is accounted for.
 */

const SECONDS = positiveEnv('SOAK_SECONDS', 60);
const LOAD = positiveEnv('SOAK_LOAD', 0.8);
const WINDOW_MS = 5_000;
const CALIBRATION_START = 5_000;
const STEP_MS = 2_000;
const PUSHES_PER_SCHEDULE = 10;
const GROUPS = 1_000;
const TICK_MS = 10;
/** Calls a paced producer may have unanswered; beyond it the tick is skipped and counted as falling behind. */
const MAX_IN_FLIGHT = 20_000;

class Counters {
  pushed = 0;
  pushFailed = 0;
  delivered = 0;
  scheduled = 0;
  scheduleFailed = 0;
  fired = 0;
  skippedTicks = 0;
  lateness: number[] = [];
}

interface Sample {
  at: number;
  pushed: number;
  delivered: number;
  scheduled: number;
  fired: number;
  latenessP99: number;
  heapMb: number;
  rssMb: number;
  redisMb: number;
  backlog: number;
  pendingTasks: number;
}

/** Issues `perSecond` calls of `call`, spread over ticks, never more than MAX_IN_FLIGHT unanswered. */
function paced(
  perSecond: number,
  counters: Counters,
  call: () => Promise<unknown>,
  onDone: () => void,
  onFail: () => void,
) {
  let issued = 0;
  let inFlight = 0;
  const started = performance.now();
  const timer = setInterval(() => {
    const due = Math.floor(((performance.now() - started) / 1000) * perSecond) - issued;
    if (inFlight > MAX_IN_FLIGHT) {
      counters.skippedTicks++;
      return;
    }
    for (let i = 0; i < due; i++) {
      issued++;
      inFlight++;
      call().then(
        () => {
          inFlight--;
          onDone();
        },
        () => {
          inFlight--;
          onFail();
        },
      );
    }
  }, TICK_MS);
  return {
    stop: async () => {
      clearInterval(timer);
      while (inFlight > 0) await sleep(10);
    },
  };
}

/**
 * The highest rate this application sustains: both queues loaded in a fixed proportion, raised step by
 * step until the consumers fall behind (less than 90% of a step's pushes delivered within it, or tasks
 * firing more than 500 ms late at p99) or the producers do; the last step they kept up with.
 */
async function calibrate(counters: Counters, push: () => Promise<unknown>, schedule: () => Promise<unknown>) {
  let rate = CALIBRATION_START;
  let sustained = 0;
  console.error('calibrating: raising the load until the consumers fall behind...');
  for (;;) {
    const before = { ...counters };
    counters.lateness = [];
    const pushing = paced(
      rate,
      counters,
      push,
      () => counters.pushed++,
      () => counters.pushFailed++,
    );
    const scheduling = paced(
      rate / PUSHES_PER_SCHEDULE,
      counters,
      schedule,
      () => counters.scheduled++,
      () => counters.scheduleFailed++,
    );
    await sleep(STEP_MS);
    await Promise.all([pushing.stop(), scheduling.stop()]);
    const pushed = counters.pushed - before.pushed;
    const kept =
      counters.delivered - before.delivered >= 0.9 * pushed &&
      p99(counters.lateness) <= 500 &&
      pushed >= 0.95 * rate * (STEP_MS / 1000) &&
      counters.skippedTicks === before.skippedTicks;
    console.error(`  ${fmt(rate)} pushes/s: ${kept ? 'kept up' : 'fell behind'}`);
    if (!kept) break;
    sustained = rate;
    rate = Math.round(rate * 1.3);
  }
  if (sustained === 0) throw new Error(`the consumers could not keep up even with ${CALIBRATION_START} pushes/s`);
  return { pushRate: sustained, scheduleRate: sustained / PUSHES_PER_SCHEDULE };
}

/** p99 of a window's samples; 0 for a window without any. */
const p99 = (values: number[]) =>
  values.length === 0
    ? 0
    : quantile(
        [...values].sort((a, b) => a - b),
        0.99,
      );
const mb = (bytes: number) => bytes / 1024 / 1024;
const fmt = (n: number, digits = 0) =>
  n.toLocaleString('en-US', { maximumFractionDigits: digits, minimumFractionDigits: digits });

async function main(): Promise<void> {
  const servers = new Servers(process.env.REDIS_URL || undefined, 'soak');
  const server = await servers.open();
  const counters = new Counters();
  const events = gameEvents(GROUPS);
  let app: INestApplicationContext | undefined;
  try {
    app = await libraryApp({
      url: server.url,
      prefix: 'soak',
      fixed: { name: 'events', capacity: 1000, batchSize: 128, maxWaitMs: 200, maxAgeMs: 180_000, shards: 8 },
      delay: { name: 'tasks', shards: 8, leaseMs: 30_000 },
      consumers: [
        batchConsumer<GameEvent>('events', 4, (messages) => {
          counters.delivered += messages.length;
        }),
        delayConsumer<{ n: number }>('tasks', 64, (_payload, ctx) => {
          // Every attempt counts: a task delivered twice shows as more fired than scheduled.
          counters.fired++;
          counters.lateness.push(Date.now() - ctx.runAt);
        }),
      ],
    });
    const fixed = fixedQueueOf<GameEvent>(app, 'events');
    const delay = delayQueueOf<{ n: number }>(app, 'tasks');
    let n = 0;
    const push = () => {
      const i = n++;
      return fixed.push(events[i % GROUPS].game, events[i % GROUPS]);
    };
    const schedule = () => delay.schedule({ n: n++ }, { delayMs: n % 1000 });

    const { pushRate, scheduleRate } = await calibrate(counters, push, schedule);
    await drain(fixed, delay, 60_000);
    const pushTarget = Math.floor(pushRate * LOAD);
    const scheduleTarget = Math.floor(scheduleRate * LOAD);
    console.error(
      `highest sustained: ${fmt(pushRate)} pushes/s with ${fmt(scheduleRate)} schedules/s; soaking at ${LOAD * 100}%: ` +
        `${fmt(pushTarget)} pushes/s and ${fmt(scheduleTarget)} schedules/s for ${SECONDS} s`,
    );

    // The soak proper, counted from zero.
    Object.assign(counters, new Counters());
    const statsBefore = await fixed.stats();
    const tasksBefore = await delay.stats();
    const pushing = paced(
      pushTarget,
      counters,
      push,
      () => counters.pushed++,
      () => counters.pushFailed++,
    );
    const scheduling = paced(
      scheduleTarget,
      counters,
      schedule,
      () => counters.scheduled++,
      () => counters.scheduleFailed++,
    );
    const samples: Sample[] = [];
    const startedAt = performance.now();
    let last = { pushed: 0, delivered: 0, scheduled: 0, fired: 0, at: performance.now() };
    const end = performance.now() + SECONDS * 1000;
    while (performance.now() < end) {
      await sleep(Math.min(WINDOW_MS, end - performance.now()));
      const sample = await takeSample(server, fixed, delay, counters, last, startedAt);
      samples.push(sample);
      last = {
        pushed: counters.pushed,
        delivered: counters.delivered,
        scheduled: counters.scheduled,
        fired: counters.fired,
        at: performance.now(),
      };
      console.error(
        `${fmt(sample.at / 1000, 0).padStart(4)} s  push ${fmt(sample.pushed)}/s  deliver ${fmt(sample.delivered)}/s  schedule ${fmt(sample.scheduled)}/s  ` +
          `fire ${fmt(sample.fired)}/s  p99 ${fmt(sample.latenessP99)} ms  heap ${fmt(sample.heapMb, 1)} MB  redis ${fmt(sample.redisMb, 1)} MB`,
      );
    }
    await Promise.all([pushing.stop(), scheduling.stop()]);
    const drained = await drain(fixed, delay, 60_000);
    // Batches claimed just before the queue read empty may still be in their handlers: wait for their counts.
    const accounted = async () => {
      const stats = await fixed.stats();
      return (
        counters.delivered + stats.dropped - statsBefore.dropped + stats.expired - statsBefore.expired >=
        counters.pushed
      );
    };
    const settleBy = performance.now() + 10_000;
    while (!(await accounted()) && performance.now() < settleBy) await sleep(50);
    const statsAfter = await fixed.stats();
    const tasksAfter = await delay.stats();

    const report = verdicts(samples, counters, drained, {
      dropped: statsAfter.dropped - statsBefore.dropped,
      expired: statsAfter.expired - statsBefore.expired,
      completed: tasksAfter.completed - tasksBefore.completed,
    });
    console.log(markdown(samples, report, { pushRate, scheduleRate, pushTarget, scheduleTarget }));
    if (report.some((line) => !line.ok)) process.exitCode = 1;
  } finally {
    await app?.close();
    await server.close();
  }
}

async function takeSample(
  server: BenchServer,
  fixed: FixedQueue<GameEvent>,
  delay: DelayQueue<{ n: number }>,
  counters: Counters,
  last: { pushed: number; delivered: number; scheduled: number; fired: number; at: number },
  startedAt: number,
): Promise<Sample> {
  const seconds = (performance.now() - last.at) / 1000;
  const lateness = counters.lateness.splice(0);
  collectGarbage();
  const memory = process.memoryUsage();
  const [info, stats, tasks] = await Promise.all([server.info('memory'), fixed.stats(), delay.stats()]);
  return {
    at: performance.now() - startedAt,
    pushed: (counters.pushed - last.pushed) / seconds,
    delivered: (counters.delivered - last.delivered) / seconds,
    scheduled: (counters.scheduled - last.scheduled) / seconds,
    fired: (counters.fired - last.fired) / seconds,
    latenessP99: p99(lateness),
    heapMb: mb(memory.heapUsed),
    rssMb: mb(memory.rss),
    redisMb: mb(infoNumber(info, 'used_memory')),
    backlog: stats.pending,
    pendingTasks: tasks.scheduled + tasks.active,
  };
}

/** Waits until both queues are empty (or `timeoutMs`); true when they are. */
async function drain(
  fixed: FixedQueue<GameEvent>,
  delay: DelayQueue<{ n: number }>,
  timeoutMs: number,
): Promise<boolean> {
  const deadline = performance.now() + timeoutMs;
  while (performance.now() < deadline) {
    const [stats, tasks] = await Promise.all([fixed.stats(), delay.stats()]);
    if (stats.pending === 0 && tasks.scheduled + tasks.active === 0) return true;
    await sleep(100);
  }
  return false;
}

interface Verdict {
  what: string;
  figure: string;
  ok: boolean;
}

function verdicts(
  samples: Sample[],
  counters: Counters,
  drained: boolean,
  redis: { dropped: number; expired: number; completed: number },
): Verdict[] {
  // The first window includes the ramp from an empty queue; flatness is judged on the rest.
  const steady = samples.length > 3 ? samples.slice(1) : samples;
  const half = Math.floor(steady.length / 2);
  const early = steady.slice(0, half);
  const late = steady.slice(half);
  const ratio = (pick: (s: Sample) => number) => median(late.map(pick)) / Math.max(1e-9, median(early.map(pick)));
  const growth = (pick: (s: Sample) => number) => Math.max(...late.map(pick)) - Math.min(...early.map(pick));
  const flat = (what: string, pick: (s: Sample) => number): Verdict => {
    const r = ratio(pick);
    return { what: `${what}: second half / first half (median)`, figure: fmt(r, 2), ok: r >= 0.9 && r <= 1.1 };
  };
  const heapGrowth = growth((s) => s.heapMb);
  const redisGrowth = growth((s) => s.redisMb);
  const accounted = redis.dropped + redis.expired + counters.delivered;

  return [
    flat('push throughput', (s) => s.pushed),
    flat('delivery throughput', (s) => s.delivered),
    flat('schedule throughput', (s) => s.scheduled),
    flat('fire throughput', (s) => s.fired),
    { what: 'Node heap growth after GC, MB (late max − early min)', figure: fmt(heapGrowth, 1), ok: heapGrowth < 20 },
    { what: 'Redis used_memory growth, MB (late max − early min)', figure: fmt(redisGrowth, 1), ok: redisGrowth < 20 },
    { what: 'queues drained after the load stopped', figure: String(drained), ok: drained },
    {
      what: 'messages: pushed = delivered + dropped + expired',
      figure: `${fmt(counters.pushed)} = ${fmt(counters.delivered)} + ${fmt(redis.dropped)} + ${fmt(redis.expired)}`,
      ok: counters.pushed === accounted,
    },
    {
      what: 'tasks: fired = scheduled, and Redis counts them completed',
      figure: `${fmt(counters.fired)} = ${fmt(counters.scheduled)} (completed ${fmt(redis.completed)})`,
      ok: counters.fired === counters.scheduled && redis.completed === counters.scheduled,
    },
    {
      what: 'calls that failed',
      figure: `${counters.pushFailed} pushes, ${counters.scheduleFailed} schedules`,
      ok: counters.pushFailed + counters.scheduleFailed === 0,
    },
    {
      what: 'producer ticks skipped (too many calls unanswered)',
      figure: String(counters.skippedTicks),
      ok: counters.skippedTicks === 0,
    },
  ];
}

function markdown(
  samples: Sample[],
  report: Verdict[],
  calibration: { pushRate: number; scheduleRate: number; pushTarget: number; scheduleTarget: number },
): string {
  const lines = [
    `## Soak: ${SECONDS} s at ${LOAD * 100}% of the calibrated rates`,
    '',
    `Calibration (load raised ×1.3 every ${STEP_MS / 1000} s): the consumers kept up with ${fmt(calibration.pushRate)} pushes/s and ` +
      `${fmt(calibration.scheduleRate)} schedules/s. ` +
      `Soak load: ${fmt(calibration.pushTarget)} pushes/s over ${GROUPS} groups (200-byte events) and ${fmt(calibration.scheduleTarget)} schedules/s due within 1 s.`,
    '',
    '| t (s) | pushes/s | delivered/s | schedules/s | fired/s | lateness p99 (ms) | backlog msgs | pending tasks | heap (MB) | RSS (MB) | Redis (MB) |',
    '| ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |',
    ...samples.map(
      (s) =>
        `| ${fmt(s.at / 1000)} | ${fmt(s.pushed)} | ${fmt(s.delivered)} | ${fmt(s.scheduled)} | ${fmt(s.fired)} | ${fmt(s.latenessP99)} | ${fmt(s.backlog)} | ` +
        `${fmt(s.pendingTasks)} | ${fmt(s.heapMb, 1)} | ${fmt(s.rssMb, 1)} | ${fmt(s.redisMb, 1)} |`,
    ),
    '',
    '| check | figure | verdict |',
    '| --- | --- | --- |',
    ...report.map((r) => `| ${r.what} | ${r.figure} | ${r.ok ? 'ok' : '**FAIL**'} |`),
  ];
  return lines.join('\n');
}

main().then(
  () => process.exit(process.exitCode ?? 0),
  (error: unknown) => {
    console.error(error instanceof Error ? error.stack : error);
    process.exit(1);
  },
);
