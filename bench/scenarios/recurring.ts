import { Injectable, type INestApplicationContext } from '@nestjs/common';
import { Queue, type Worker } from 'bullmq';
import { Recurring, type RecurringContext } from 'nestjs-redis-queues';
import { BULLMQ, bullConnection, bullWorker } from '../contenders/bullmq';
import { LIBRARY, libraryApp } from '../contenders/library';
import { isSmoke, type BenchContext, type Scenario } from '../harness/context';
import { sleep } from '../harness/load';
import { Recorder, type MetricSpec } from '../harness/results';
import { latency } from '../harness/stats';

const EVERY_MS = 100;
const REPLICAS = 4;

const P50: MetricSpec = { label: 'tick lateness p50 (tick → handler)', unit: 'ms', better: 'lower' };
const P99: MetricSpec = { label: 'tick lateness p99', unit: 'ms', better: 'lower' };
const DUPLICATED: MetricSpec = { label: 'ticks run more than once', unit: 'ticks', better: 'lower' };
const MISSED: MetricSpec = { label: 'ticks never run', unit: 'ticks', better: 'lower' };

/** One replica's view of a run: the tick it stands for (ms), and when its handler started. */
interface Run {
  tick: number;
  startedAt: number;
}

/** Lateness, and the ticks of the grid between the first and last run that ran twice or never. */
function score(runs: Run[]): { lateness: Float64Array; duplicated: number; missed: number } {
  const ticks = runs.map((run) => run.tick).sort((a, b) => a - b);
  let duplicated = 0;
  let missed = 0;
  for (let i = 1; i < ticks.length; i++) {
    const gap = ticks[i] - ticks[i - 1];
    if (gap < EVERY_MS / 2) duplicated += 1;
    else missed += Math.max(0, Math.round(gap / EVERY_MS) - 1);
  }
  return { lateness: Float64Array.from(runs, (run) => run.startedAt - run.tick), duplicated, missed };
}

/**
 * A job every 100 ms declared by four replicas of one app, as a distributed cron: this library's
 * `@Recurring` against BullMQ's job schedulers (`upsertJobScheduler`, each replica upserting at start).
 * The tick of a BullMQ run is the time its scheduler planned it for (its `timestamp + delay`).
 */
export const recurringScenario: Scenario = {
  name: 'recurring',
  summary:
    '@Recurring vs BullMQ job schedulers: a job every 100 ms on four replicas, lateness and duplicated or missed ticks',
  async run(ctx: BenchContext) {
    const seconds = isSmoke(ctx) ? 0.5 : Math.max(2, Math.round(60 * Math.min(1, ctx.scale)));
    const recorder = new Recorder(
      'recurring',
      `Recurring job every ${EVERY_MS} ms on ${REPLICAS} replicas for ${seconds} s (a distributed cron)`,
      { everyMs: EVERY_MS, replicas: REPLICAS, seconds },
    )
      .contender(LIBRARY, `${LIBRARY}: @Recurring({ everyMs: ${EVERY_MS} }) in each replica`)
      .contender(BULLMQ, `BullMQ: upsertJobScheduler(id, { every: ${EVERY_MS} }) by each replica, one Worker each`)
      .ratio('library / BullMQ', P99, LIBRARY, BULLMQ, { op: '<=', value: 0.1 })
      .check('no duplicated tick', DUPLICATED, LIBRARY, { op: '<=', value: 0 })
      .check('no missed tick', MISSED, LIBRARY, { op: '<=', value: 0 });

    const record = (contender: string, runs: Run[]) => {
      const { lateness, duplicated, missed } = score(runs);
      const { p50, p99 } = latency(lateness);
      recorder.record(P50, contender, p50);
      recorder.record(P99, contender, p99);
      recorder.record(DUPLICATED, contender, duplicated);
      recorder.record(MISSED, contender, missed);
      ctx.log(
        `  ${contender}: ${runs.length} runs, p50 ${p50.toFixed(1)} ms, p99 ${p99.toFixed(1)} ms, ${duplicated} duplicated, ${missed} missed`,
      );
    };

    for (let round = 1; round <= ctx.rounds; round++) {
      ctx.log(`  round ${round}/${ctx.rounds}: ${LIBRARY}`);
      record(LIBRARY, await runLibrary(ctx, seconds));
      ctx.log(`  round ${round}/${ctx.rounds}: ${BULLMQ}`);
      record(BULLMQ, await runBull(ctx, seconds));
    }
    recorder.note(
      'Lateness: from the tick a run stands for to the start of its handler, by the clock of this machine (the replicas and Redis share it). ' +
        'Duplicated and missed ticks are counted on the 100 ms grid between the first and the last run, whichever replica ran them. ' +
        'The first second is left out of the figures (replicas starting).',
    );
    return recorder.result();
  },
};

/** Replicas starting, left out of the figures. */
const warmUpMs = (ctx: BenchContext) => (isSmoke(ctx) ? 300 : 1000);

async function runLibrary(ctx: BenchContext, seconds: number): Promise<Run[]> {
  const server = await ctx.servers.open();
  const prefix = ctx.prefix('recurring');
  const runs: Run[] = [];
  let measuring = false;
  @Injectable()
  class Tick {
    @Recurring({ everyMs: EVERY_MS, name: 'bench.tick' })
    run(tick: RecurringContext) {
      if (measuring) runs.push({ tick: tick.occurrence, startedAt: Date.now() });
    }
  }
  const apps: INestApplicationContext[] = [];
  try {
    for (let i = 0; i < REPLICAS; i++) apps.push(await libraryApp({ url: server.url, prefix, consumers: [Tick] }));
    await sleep(warmUpMs(ctx));
    measuring = true;
    await sleep(seconds * 1000);
    measuring = false;
  } finally {
    await Promise.all(apps.map((app) => app.close()));
    await server.close();
  }
  return runs;
}

async function runBull(ctx: BenchContext, seconds: number): Promise<Run[]> {
  const server = await ctx.servers.open();
  const prefix = ctx.prefix('recurring-bull');
  const runs: Run[] = [];
  let measuring = false;
  const queues: Queue[] = [];
  const workers: Worker[] = [];
  try {
    for (let i = 0; i < REPLICAS; i++) {
      const queue = new Queue('ticks', {
        connection: bullConnection(server.url),
        prefix,
        defaultJobOptions: { removeOnComplete: true, removeOnFail: true },
      });
      queues.push(queue);
      workers.push(
        await bullWorker(server.url, prefix, 'ticks', 1, (job) => {
          if (measuring) runs.push({ tick: job.timestamp + (job.opts.delay ?? 0), startedAt: Date.now() });
        }),
      );
      await queue.upsertJobScheduler('bench.tick', { every: EVERY_MS });
    }
    await sleep(warmUpMs(ctx));
    measuring = true;
    await sleep(seconds * 1000);
    measuring = false;
  } finally {
    await Promise.all(workers.map((worker) => worker.close()));
    await Promise.all(queues.map((queue) => queue.close()));
    await server.close();
  }
  return runs;
}
