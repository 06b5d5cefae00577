import IORedis from 'ioredis';
import { Injectable } from '@nestjs/common';
import { TaskSource, type SourcedTask } from 'nestjs-redis-queues';
import { delayQueueOf, LIBRARY, libraryApp } from '../contenders/library';
import { scaled, type BenchContext, type Scenario } from '../harness/context';
import { collectGarbage, RssSampler } from '../harness/load';
import { Recorder, type MetricSpec } from '../harness/results';

const RESTORE = `${LIBRARY} reconcile(), every task missing`;
const PRESENT = `${LIBRARY} reconcile(), every task present`;
const SHARDS = 8;

const RATE: MetricSpec = { label: 'listed tasks per second', unit: 'task/s', better: 'higher' };
const TOOK: MetricSpec = { label: 'pass duration', unit: 'ms', better: 'lower' };
const RSS: MetricSpec = { label: 'peak RSS of the process during the pass', unit: 'MB', better: 'lower' };
const HEAP: MetricSpec = { label: 'peak V8 heap used during the pass', unit: 'MB', better: 'lower' };

/** Rows the source lists in the next pass: none for the start-up pass, then the scenario's. */
let rows = 0;

/** The source: a generator making each row as it is read, as a database cursor hands them over. */
@Injectable()
class Meals {
  @TaskSource('bench.meals')
  *meals(): Iterable<SourcedTask<{ petId: string; grams: number }>> {
    const base = Date.now() + 3600_000;
    for (let i = 0; i < rows; i++)
      yield { id: `meal:${i}`, runAt: base + i, payload: { petId: `pet:${i}`, grams: i % 500 } };
  }
}

/** Samples the V8 heap used; `peakMB` is the highest seen. */
class HeapSampler {
  private peak = process.memoryUsage().heapUsed;
  private readonly timer = setInterval(() => {
    this.peak = Math.max(this.peak, process.memoryUsage().heapUsed);
  }, 50);

  stop(): number {
    clearInterval(this.timer);
    return this.peak / 2 ** 20;
  }
}

/**
 * A DelayQueue's task source listing 1,000,000 rows (a generator making them as they are read): one pass
 * into an empty queue (every task restored, as after a data loss), then one over the full queue (every
 * task kept: the cost of a periodic pass when nothing is missing), with the process' peak memory.
 */
export const reconcileScenario: Scenario = {
  name: 'reconcile',
  summary: 'a task source of 1,000,000 rows: reconcile() into an empty queue and over a full one, tasks/s and memory',
  async run(ctx: BenchContext) {
    const total = scaled(ctx, 1_000_000, 1000);
    const recorder = new Recorder(
      'reconcile',
      `Task source: reconcile() of ${total.toLocaleString('en-US')} listed rows, ${SHARDS} shards`,
      { rows: total, shards: SHARDS, source: 'an in-process generator making each row as it is read' },
    )
      .contender(RESTORE, RESTORE)
      .contender(PRESENT, PRESENT);
    for (let round = 1; round <= ctx.rounds; round++) {
      const server = await ctx.servers.open();
      rows = 0;
      const prefix = ctx.prefix('reconcile');
      const app = await libraryApp({
        url: server.url,
        prefix,
        delay: { name: 'bench.meals', shards: SHARDS },
        consumers: [Meals],
      });
      try {
        const queue = delayQueueOf(app, 'bench.meals');
        // The pass its record's creation owes runs when it is noticed, maybe after a pass asked for: wait
        // until none is owed, then one more pass (no rows), since passes of a process run one after the
        // other: none that lists the rows runs beside the measured ones.
        await queue.reconcile();
        const redis = new IORedis(server.url);
        try {
          for (let owed = 1; owed === 1; await new Promise((resolve) => setTimeout(resolve, 20)))
            owed = await redis.hexists(`${prefix}:{bench.meals}:meta`, 'owed');
        } finally {
          await redis.quit();
        }
        await queue.reconcile();
        rows = total;
        for (const [key, expected] of [
          [RESTORE, 'restored'],
          [PRESENT, 'kept'],
        ] as const) {
          ctx.log(`  round ${round}/${ctx.rounds}: ${key}`);
          collectGarbage();
          const rss = new RssSampler();
          const heap = new HeapSampler();
          const result = await queue.reconcile();
          const peakRss = rss.stop();
          const peakHeap = heap.stop();
          if (result[expected] !== total) throw new Error(`${key}: ${JSON.stringify(result)}`);
          recorder.record(RATE, key, total / (result.durationMs / 1000));
          recorder.record(TOOK, key, result.durationMs);
          recorder.record(RSS, key, peakRss);
          recorder.record(HEAP, key, peakHeap);
          ctx.log(
            `    ${result.durationMs} ms, ${Math.round(total / (result.durationMs / 1000))} tasks/s, RSS ${peakRss.toFixed(0)} MB, heap ${peakHeap.toFixed(0)} MB`,
          );
        }
      } finally {
        await app.close();
        await server.close();
      }
    }
    recorder.note(
      'The source is a synchronous generator in the same process; a real database cursor adds its own time. ' +
        'Tasks are written 100 per script call per shard, 16 calls under way at once, so memory holds a few thousand tasks whatever the source size.',
    );
    return recorder.result();
  },
};
