import { bullQueue, bullWorker, BULLMQ } from '../contenders/bullmq';
import { delayConsumer, delayQueueOf, LIBRARY, libraryApp } from '../contenders/library';
import { interleave, isSmoke, scaled, type BenchContext, type Scenario } from '../harness/context';
import { collectGarbage, Countdown, cpuMs, inParallel, now, RssSampler, sleep } from '../harness/load';
import { Recorder, type MetricSpec } from '../harness/results';
import type { BenchServer } from '../harness/servers';
import { latency } from '../harness/stats';

export interface FeedTask {
  pet: string;
  meal: string;
  /** Intended due time, epoch ms: lateness is measured against it at handler entry. */
  due: number;
}

export interface Planned {
  id: string;
  payload: FeedTask;
}

export interface Consumer {
  schedule(tasks: Planned[]): Promise<void>;
  close(): Promise<void>;
  /** Resolves once `total` tasks are acknowledged (not only handed to the handler). */
  settled(total: number): Promise<void>;
}

export interface DelayContender {
  key: string;
  label: string;
  consumer(server: BenchServer, prefix: string, onFire: (task: FeedTask) => void): Promise<Consumer>;
}

export const DELAY_QUEUE = 'feeding';
const CONCURRENCY = 64;
/** Schedule calls in flight; BullMQ's are bulk adds of `BULK` jobs. */
const IN_FLIGHT = 1000;
const BULK = 500;
const SETTLE_TIMEOUT_MS = 180_000;

export const libraryContender: DelayContender = {
  key: LIBRARY,
  label: `${LIBRARY} @DelayConsumer`,
  async consumer(server, prefix, onFire) {
    const consumer = delayConsumer<FeedTask>(DELAY_QUEUE, CONCURRENCY, onFire);
    const app = await libraryApp({ url: server.url, prefix, delay: { name: DELAY_QUEUE }, consumers: [consumer] });
    const queue = delayQueueOf<FeedTask>(app, DELAY_QUEUE);
    // The counter lives in Redis and may already count earlier rounds on the same queue.
    const before = (await queue.stats()).completed;
    return {
      schedule: (tasks) =>
        inParallel(tasks.length, IN_FLIGHT, (i) =>
          queue.schedule(tasks[i].payload, { id: tasks[i].id, runAt: tasks[i].payload.due }),
        ),
      settled: (total) =>
        until(
          async () => (await queue.stats()).completed - before >= total,
          SETTLE_TIMEOUT_MS,
          `${LIBRARY}: ${total} tasks acknowledged`,
        ),
      close: () => app.close(),
    };
  },
};

async function bullSchedule(queue: ReturnType<typeof bullQueue>, tasks: Planned[]): Promise<void> {
  await inParallel(Math.ceil(tasks.length / BULK), IN_FLIGHT / BULK, async (chunk) => {
    const at = Date.now();
    await queue.addBulk(
      tasks.slice(chunk * BULK, (chunk + 1) * BULK).map(({ id, payload }) => ({
        name: 'feed',
        data: payload,
        // Job time plus delay is BullMQ's due time: pinning both makes it exactly the intended one.
        opts: { jobId: id, timestamp: at, delay: Math.max(0, payload.due - at) },
      })),
    );
  });
}

export const bullContender: DelayContender = {
  key: BULLMQ,
  label: `${BULLMQ} delayed jobs + Worker`,
  async consumer(server, prefix, onFire) {
    const queue = bullQueue(server.url, prefix, DELAY_QUEUE);
    let completed = 0;
    const worker = await bullWorker<FeedTask>(server.url, prefix, DELAY_QUEUE, CONCURRENCY, (job) => onFire(job.data));
    worker.on('completed', () => completed++);
    await queue.waitUntilReady();
    return {
      schedule: (tasks) => bullSchedule(queue, tasks),
      settled: (total) => until(() => completed >= total, SETTLE_TIMEOUT_MS, `${BULLMQ}: ${total} jobs completed`),
      close: async () => {
        await worker.close();
        await queue.close();
      },
    };
  },
};

export async function until(probe: () => boolean | Promise<boolean>, timeoutMs: number, what: string): Promise<void> {
  const deadline = now() + timeoutMs;
  while (!(await probe())) {
    if (now() > deadline) throw new Error(`timed out after ${timeoutMs} ms waiting for ${what}`);
    await sleep(10);
  }
}

export const plan = (count: number, label: string, due: (i: number) => number): Planned[] =>
  Array.from({ length: count }, (_, i) => ({
    id: `${label}-${i}`,
    payload: { pet: `pet-${i}`, meal: 'kibble', due: due(i) },
  }));

// Summed inside Redis: one call per SCAN page instead of one round trip per key (BullMQ has a key per job).
const SUM_MEMORY_USAGE = `local total = 0
for i = 1, #KEYS do total = total + (redis.call('MEMORY', 'USAGE', KEYS[i], 'SAMPLES', '0') or 0) end
return total`;

/** Sum of MEMORY USAGE over every key under `prefix`, each counted in full (SAMPLES 0). */
export async function keyBytes(server: BenchServer, prefix: string): Promise<number> {
  let total = 0;
  let cursor = '0';
  do {
    const [next, keys] = await server.admin.scan(cursor, 'MATCH', `${prefix}*`, 'COUNT', 5000);
    cursor = next;
    if (keys.length > 0) total += Number(await server.admin.eval(SUM_MEMORY_USAGE, keys.length, ...keys));
  } while (cursor !== '0');
  return total;
}

export async function onFreshServer<T>(ctx: BenchContext, work: (server: BenchServer) => Promise<T>): Promise<T> {
  const server = await ctx.servers.open();
  try {
    return await work(server);
  } finally {
    await server.close();
  }
}

export interface FireOutcome {
  /** Tasks scheduled per second (with the consumer up and idle: nothing is due yet). */
  scheduleRate: number;
  scheduleCpuMs: number;
  /** Redis bytes per scheduled task while all are pending, when asked for: INFO and MEMORY USAGE. */
  memory?: { info: number; keys: number };
  /** Tasks handled per second, from the first due time to the last handler entry. */
  fireRate: number;
  lateness: Float64Array;
  /** Whether scheduling (and measuring memory) was still under way when the first task fell due. */
  overran: boolean;
  fireCpuMs: number;
  rssMB: number;
}

export interface FireOptions {
  count: number;
  /** How far ahead the first task is due; `leadFor` makes sure scheduling is over by then. */
  leadMs: number;
  /** Due time of task i after the first. */
  offset(i: number): number;
  memory?: boolean;
}

/**
 * Starts a consumer, schedules tasks due from `leadMs` ahead, optionally measures the memory they take
 * while pending, and measures them firing. The server should hold nothing else that falls due.
 */
export async function fire(
  server: BenchServer,
  prefix: string,
  contender: DelayContender,
  options: FireOptions,
): Promise<FireOutcome> {
  const { count } = options;
  const lateness = new Float64Array(count);
  const countdown = new Countdown(count);
  let lastEntry = 0;
  const consumer = await contender.consumer(server, prefix, (task) => {
    lastEntry = Date.now();
    if (countdown.count < count) lateness[countdown.count] = lastEntry - task.due;
    countdown.add();
  });
  try {
    const keysBefore = options.memory ? await keyBytes(server, prefix) : 0;
    const bytesBefore = await server.dataBytes();
    const first = Date.now() + options.leadMs;
    const planned = plan(count, 'feed', (i) => first + options.offset(i));
    let cpu = process.cpuUsage();
    const started = now();
    await consumer.schedule(planned);
    const scheduleRate = (count / (now() - started)) * 1000;
    const scheduleCpuMs = cpuMs(cpu);
    const memory = options.memory
      ? {
          info: ((await server.dataBytes()) - bytesBefore) / count,
          keys: ((await keyBytes(server, prefix)) - keysBefore) / count,
        }
      : undefined;
    const overran = Date.now() > first;
    cpu = process.cpuUsage();
    const rss = new RssSampler();
    await countdown.within(SETTLE_TIMEOUT_MS, `${contender.key}: ${count} tasks fired`);
    await consumer.settled(count);
    const fireCpuMs = cpuMs(cpu);
    const rssMB = rss.stop();
    if (countdown.count !== count)
      throw new Error(`${contender.key}: ${countdown.count} deliveries for ${count} tasks`);
    return {
      scheduleRate,
      scheduleCpuMs,
      memory,
      fireRate: (count / Math.max(1, lastEntry - first)) * 1000,
      lateness,
      overran,
      fireCpuMs,
      rssMB,
    };
  } finally {
    await consumer.close();
  }
}

const SCHEDULE: MetricSpec = { label: 'schedule throughput', unit: 'task/s', better: 'higher' };
const MEMORY_INFO: MetricSpec = {
  label: 'Redis memory per pending task, INFO used_memory Δ',
  unit: 'B',
  better: 'lower',
};
const MEMORY_KEYS: MetricSpec = {
  label: 'Redis memory per pending task, MEMORY USAGE of its keys',
  unit: 'B',
  better: 'lower',
};
const SCHEDULE_CPU: MetricSpec = { label: 'Node CPU per 1k scheduled', unit: 'CPU ms', better: 'lower' };
const FIRE: MetricSpec = { label: 'fire throughput', unit: 'task/s', better: 'higher' };
const LATE_P50: MetricSpec = { label: 'burst lateness p50', unit: 'ms', better: 'lower' };
const LATE_P99: MetricSpec = { label: 'burst lateness p99', unit: 'ms', better: 'lower' };
const LATE_MAX: MetricSpec = { label: 'burst lateness max', unit: 'ms', better: 'lower' };
const FIRE_CPU: MetricSpec = { label: 'Node CPU per 1k fired', unit: 'CPU ms', better: 'lower' };
const RSS: MetricSpec = { label: 'Node RSS peak while firing', unit: 'MB', better: 'lower' };
const STEADY_P50: MetricSpec = { label: 'steady lateness p50', unit: 'ms', better: 'lower' };
const STEADY_P99: MetricSpec = { label: 'steady lateness p99', unit: 'ms', better: 'lower' };
const STEADY_MAX: MetricSpec = { label: 'steady lateness max', unit: 'ms', better: 'lower' };

/**
 * How far ahead to put the first due time so that scheduling `count` tasks (at the `rate` seen last time)
 * and measuring memory are over before it: tasks must not fall due while others are still being written.
 * A smoke run's few tasks need less of the fixed margin.
 */
export const leadFor = (ctx: BenchContext, count: number, rate: number, memory = false) =>
  Math.ceil((count / rate) * 1000 * 1.3) + (isSmoke(ctx) ? 100 : 400) + (memory ? 300 + Math.ceil(count / 100) : 0);

export const delayScenario: Scenario = {
  name: 'delay',
  summary: 'DelayQueue vs BullMQ delayed jobs: schedule, fire, lateness (burst and steady), memory per task, CPU',
  async run(ctx: BenchContext) {
    const tasks = scaled(ctx, 100_000, 50);
    // Due over a window at 100k/s: a consumer slower than that is measured at its capacity.
    const spreadMs = Math.max(1, Math.round(tasks / 100));
    const steadyRate = 1000;
    const steadyTasks = isSmoke(ctx) ? 100 : Math.max(500, Math.round(steadyRate * 10 * Math.min(1, ctx.scale)));
    const recorder = new Recorder(
      'delay',
      `DelayQueue vs BullMQ: ${tasks.toLocaleString('en')} tasks due within ${spreadMs.toLocaleString('en')} ms, consumer concurrency ${CONCURRENCY}; ` +
        `then ${steadyRate.toLocaleString('en')} due tasks/s for ${steadyTasks / steadyRate} s`,
      { tasks, spreadMs, concurrency: CONCURRENCY, inFlight: IN_FLIGHT, bullBulk: BULK, steadyRate, steadyTasks },
    )
      .contender(LIBRARY, libraryContender.label)
      .contender(BULLMQ, bullContender.label)
      .ratio(`${LIBRARY} / ${BULLMQ}: schedule throughput`, SCHEDULE, LIBRARY, BULLMQ)
      .ratio(`${LIBRARY} / ${BULLMQ}: fire throughput`, FIRE, LIBRARY, BULLMQ, { op: '>=', value: 3 })
      .ratio(`${LIBRARY} / ${BULLMQ}: burst lateness p99`, LATE_P99, LIBRARY, BULLMQ, { op: '<=', value: 0.5 })
      .ratio(`${LIBRARY} / ${BULLMQ}: steady lateness p99`, STEADY_P99, LIBRARY, BULLMQ, { op: '<=', value: 0.5 })
      .ratio(`${LIBRARY} / ${BULLMQ}: memory per pending task (INFO)`, MEMORY_INFO, LIBRARY, BULLMQ, {
        op: '<=',
        value: 1 / 3,
      })
      .ratio(`${LIBRARY} / ${BULLMQ}: memory per pending task (MEMORY USAGE)`, MEMORY_KEYS, LIBRARY, BULLMQ, {
        op: '<=',
        value: 1 / 3,
      })
      .check(`${LIBRARY} steady lateness p99`, STEADY_P99, LIBRARY, { op: '<=', value: 10 });

    /** Schedule rate seen in the contender's previous round, to size the next lead; the warm-up starts from a low guess. */
    const lastRate = new Map<string, number>();
    const round = async (contender: DelayContender, warmup: boolean) => {
      const count = warmup ? Math.max(1, Math.round(tasks / 10)) : tasks;
      const rate = lastRate.get(contender.key) ?? 5000;
      const burst = await onFreshServer(ctx, (server) =>
        fire(server, ctx.prefix('burst'), contender, {
          count,
          leadMs: leadFor(ctx, count, rate, true),
          offset: (i) => Math.floor((i * spreadMs) / count),
          memory: true,
        }),
      );
      lastRate.set(contender.key, burst.scheduleRate);
      if (warmup) return;
      if (burst.overran)
        recorder.note(
          `${contender.key}: in a round, scheduling the burst outlasted its lead; that round's lateness includes it.`,
        );
      const late = latency(burst.lateness);
      recorder.record(SCHEDULE, contender.key, burst.scheduleRate);
      recorder.record(SCHEDULE_CPU, contender.key, (burst.scheduleCpuMs * 1000) / count);
      recorder.record(MEMORY_INFO, contender.key, burst.memory!.info);
      recorder.record(MEMORY_KEYS, contender.key, burst.memory!.keys);
      recorder.record(FIRE, contender.key, burst.fireRate);
      recorder.record(LATE_P50, contender.key, late.p50);
      recorder.record(LATE_P99, contender.key, late.p99);
      recorder.record(LATE_MAX, contender.key, late.max);
      recorder.record(FIRE_CPU, contender.key, (burst.fireCpuMs * 1000) / count);
      recorder.record(RSS, contender.key, burst.rssMB);

      collectGarbage();
      const steady = await onFreshServer(ctx, (server) =>
        fire(server, ctx.prefix('steady'), contender, {
          count: steadyTasks,
          leadMs: leadFor(ctx, steadyTasks, burst.scheduleRate),
          offset: (i) => Math.floor((i * 1000) / steadyRate),
        }),
      );
      if (steady.overran)
        recorder.note(
          `${contender.key}: in a round, scheduling the steady run outlasted its lead; that round's lateness includes it.`,
        );
      const steadyLate = latency(steady.lateness);
      recorder.record(STEADY_P50, contender.key, steadyLate.p50);
      recorder.record(STEADY_P99, contender.key, steadyLate.p99);
      recorder.record(STEADY_MAX, contender.key, steadyLate.max);
    };

    await interleave(
      ctx,
      [libraryContender, bullContender].map((contender) => ({
        key: contender.key,
        round: (_: number, warmup: boolean) => round(contender, warmup),
      })),
    );
    recorder.note(
      'Lateness is measured alike for both: Date.now() at handler entry minus the intended due time, on one machine clock. ' +
        `Both schedule with ${IN_FLIGHT.toLocaleString('en')} tasks in flight (BullMQ: addBulk of ${BULK}), with business ids as task / job ids; ` +
        'BullMQ removes completed jobs (removeOnComplete), as the library deletes acknowledged tasks.',
    );
    recorder.note(
      'Memory per pending task is measured on a server holding nothing but this queue and its idle consumer, after scheduling and before the first task falls due: ' +
        'the change in INFO used_memory without client buffers and the script cache, and in the sum of MEMORY USAGE … SAMPLES 0 over the keys.',
    );
    return recorder.result();
  },
};
