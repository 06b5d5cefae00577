import type { FixedQueueOptions } from 'nestjs-redis-queues';
import { batchConsumer, fixedQueueOf, LIBRARY, libraryApp } from '../contenders/library';
import { interleave, isSmoke, scaled, type BenchContext, type Scenario } from '../harness/context';
import { Countdown, now, sleep } from '../harness/load';
import { Recorder, type MetricSpec } from '../harness/results';
import { latency } from '../harness/stats';

const ORDERED = `${LIBRARY} ordered`;
const UNORDERED = `${LIBRARY} unordered`;
const MODES: Record<string, Partial<FixedQueueOptions>> = { [ORDERED]: {}, [UNORDERED]: { ordered: false } };

const COLD_GROUPS = 100;
const BATCH = 128;
const CONCURRENCY = 8;
const HANDLER_MS = 5;
/** Pushes are sent in slices this often, spreading the rate evenly over each second. */
const TICK_MS = 10;

const THROUGHPUT: MetricSpec = { label: 'delivered throughput', unit: 'msg/s', better: 'higher' };
const HOT_P99: MetricSpec = { label: 'hot group lag p99 (push → handler)', unit: 'ms', better: 'lower' };
const HOT_MAX: MetricSpec = { label: 'hot group oldest-message lag (max)', unit: 'ms', better: 'lower' };
const COLD_P99: MetricSpec = { label: 'cold groups lag p99', unit: 'ms', better: 'lower' };

/**
 * One group takes half the traffic, 100 others share the rest, and each batch takes its handler 5 ms:
 * what ordering costs a hot group (its batches one at a time) against running them in parallel.
 */
export const hotGroupScenario: Scenario = {
  name: 'hot-group',
  summary: 'FixedQueue ordered vs unordered with one group taking half the traffic and handlers of 5 ms',
  async run(ctx: BenchContext) {
    const rate = scaled(ctx, 40_000, 1000);
    const seconds = isSmoke(ctx) ? 0.5 : Math.max(2, Math.round(5 * Math.min(1, ctx.scale)));
    const total = rate * seconds;
    const recorder = new Recorder(
      'hot-group',
      `FixedQueue with a hot group: ${rate.toLocaleString('en')} pushes/s for ${seconds} s, half to one group and half over ${COLD_GROUPS} others; batches of ${BATCH}, ${CONCURRENCY} at once, ${HANDLER_MS} ms each`,
      { rate, seconds, coldGroups: COLD_GROUPS, batch: BATCH, concurrency: CONCURRENCY, handlerMs: HANDLER_MS },
    )
      .contender(ORDERED, `${LIBRARY}, ordered (default): a group's batches one at a time`)
      .contender(UNORDERED, `${LIBRARY}, ordered: false: a hot group's batches in parallel`)
      .ratio('ordered / unordered: delivered throughput', THROUGHPUT, ORDERED, UNORDERED)
      .ratio('ordered / unordered: hot group oldest-message lag (max)', HOT_MAX, ORDERED, UNORDERED);

    const measure = async (mode: string, record: boolean, pushes: number) => {
      const server = await ctx.servers.open();
      const prefix = ctx.prefix('hot');
      const countdown = new Countdown(pushes);
      const hotLag = new Float64Array(pushes);
      const coldLag = new Float64Array(pushes);
      let hot = 0;
      let cold = 0;
      const consumer = batchConsumer<{ at: number }>('events', CONCURRENCY, async (messages, batch) => {
        const handled = now();
        for (const { at } of messages) {
          if (batch.group === 'hot') hotLag[hot++] = handled - at;
          else coldLag[cold++] = handled - at;
        }
        await sleep(HANDLER_MS);
        countdown.add(messages.length);
      });
      const options = { name: 'events', capacity: 1_000_000, batchSize: BATCH, maxWaitMs: 50, ...MODES[mode] };
      const app = await libraryApp({ url: server.url, prefix, fixed: options, consumers: [consumer] });
      try {
        const queue = fixedQueueOf<{ at: number; pad: string }>(app, 'events');
        const pad = 'x'.repeat(180);
        const perTick = Math.max(1, Math.round((rate * TICK_MS) / 1000));
        const started = now();
        let sent = 0;
        while (sent < pushes) {
          const slice = Math.min(perTick, pushes - sent);
          const at = now();
          const writes = Array.from({ length: slice }, (_, i) => {
            const n = sent + i;
            const group = n % 2 === 0 ? 'hot' : `cold-${n % COLD_GROUPS}`;
            return queue.push(group, { at, pad });
          });
          sent += slice;
          await Promise.all(writes);
          const ahead = started + (sent / rate) * 1000 - now();
          if (ahead > 0) await sleep(ahead);
        }
        const drained = await countdown.within(120_000, `${mode} drain`);
        if (!record) return;
        recorder.record(THROUGHPUT, mode, (pushes / (drained - started)) * 1000);
        const hotLatency = latency(hotLag.subarray(0, hot));
        recorder.record(HOT_P99, mode, hotLatency.p99);
        recorder.record(HOT_MAX, mode, hotLatency.max);
        recorder.record(COLD_P99, mode, latency(coldLag.subarray(0, cold)).p99);
      } finally {
        await app.close();
        await server.close();
      }
    };

    await interleave(
      ctx,
      Object.keys(MODES).map((mode) => ({
        key: mode,
        round: (_: number, warmup: boolean) => measure(mode, !warmup, warmup ? Math.round(total / 10) : total),
      })),
    );
    recorder.note(
      'Throughput: pushes over the time from the first push to the last message handled, so it stays at the push rate while consumers keep up. ' +
        'Lag: from the push (this process) to the start of the handler that received the message.',
    );
    return recorder.result();
  },
};
