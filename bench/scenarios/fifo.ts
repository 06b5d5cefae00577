import IORedis from 'ioredis';
import { Queue as GroupQueue, Worker as GroupWorker } from 'groupmq';
import { batchConsumer, fixedQueueOf, LIBRARY, libraryApp } from '../contenders/library';
import { interleave, scaled, type BenchContext, type Scenario } from '../harness/context';
import { Countdown, cpuMs, inParallel, now } from '../harness/load';
import { Recorder, type MetricSpec } from '../harness/results';
import type { BenchServer } from '../harness/servers';

const GROUPMQ = 'GroupMQ';
const SINGLE = `${LIBRARY} batchSize 1`;
const BATCHES = `${LIBRARY} batchSize 128`;
const CONCURRENCY = 16;
const DRAIN_TIMEOUT_MS = 180_000;

const THROUGHPUT: MetricSpec = { label: 'drain throughput', unit: 'msg/s', better: 'higher' };
const NODE_CPU: MetricSpec = { label: 'Node CPU per delivered message', unit: 'CPU µs', better: 'lower' };
const REDIS_CPU: MetricSpec = { label: 'Redis CPU per delivered message', unit: 'CPU µs', better: 'lower' };

interface Message {
  seq: number;
}

/**
 * Checks per-group FIFO as messages are handled: each group's sequence numbers must come in push
 * order, one after the other (a contender that reorders or repeats fails the run).
 */
class OrderCheck {
  private readonly next = new Map<string, number>();
  /** When the first message was handled: start-up (a Nest application, a Worker) is not timed. */
  firstAt = 0;

  see(group: string, seq: number): void {
    if (this.firstAt === 0) this.firstAt = now();
    const expected = this.next.get(group) ?? 0;
    if (seq !== expected) throw new Error(`group ${group}: message ${seq} handled where ${expected} was next`);
    this.next.set(group, seq + 1);
  }
}

export const fifoScenario: Scenario = {
  name: 'fifo',
  summary: 'per-group FIFO: GroupMQ vs FixedQueue ordered at-least-once with batchSize 1 and 128, 16 handlers',
  async run(ctx: BenchContext) {
    const groups = scaled(ctx, 200, 4);
    const perGroup = scaled(ctx, 100, 2);
    const total = groups * perGroup;
    const recorder = new Recorder(
      'fifo',
      `Per-group FIFO: drain ${total.toLocaleString('en')} messages (${groups} groups × ${perGroup}), ${CONCURRENCY} handlers doing nothing, at-least-once, order checked`,
      { groups, perGroup, total, concurrency: CONCURRENCY },
    )
      .contender(GROUPMQ, 'GroupMQ Worker (one job per delivery)')
      .contender(SINGLE, `${LIBRARY} @BatchConsumer, ordered at-least-once, batchSize 1`)
      .contender(BATCHES, `${LIBRARY} @BatchConsumer, ordered at-least-once, batchSize 128`)
      .ratio('batchSize 1 / GroupMQ', THROUGHPUT, SINGLE, GROUPMQ, { op: '>=', value: 1.5 })
      .ratio('batchSize 128 / GroupMQ', THROUGHPUT, BATCHES, GROUPMQ, { op: '>=', value: 20 });

    const measure = async (
      contender: string,
      count: number,
      record: boolean,
      prepare: (server: BenchServer) => Promise<void>,
      drain: (server: BenchServer, countdown: Countdown, order: OrderCheck) => Promise<() => Promise<void>>,
    ) => {
      const server = await ctx.servers.open();
      try {
        await prepare(server);
        const countdown = new Countdown(count);
        const order = new OrderCheck();
        const redisBefore = await server.cpuMs();
        const cpu = process.cpuUsage();
        const close = await drain(server, countdown, order);
        const drained = await countdown.within(DRAIN_TIMEOUT_MS, `${contender} drain`);
        const nodeCpu = cpuMs(cpu);
        const redisCpu = (await server.cpuMs()) - redisBefore;
        await close();
        if (countdown.count !== count) throw new Error(`${contender} delivered ${countdown.count} of ${count}`);
        if (!record) return;
        recorder.record(THROUGHPUT, contender, (count / (drained - order.firstAt)) * 1000);
        recorder.record(NODE_CPU, contender, (nodeCpu * 1000) / count);
        recorder.record(REDIS_CPU, contender, (redisCpu * 1000) / count);
      } finally {
        await server.close();
      }
    };

    const messages = Array.from({ length: perGroup }, (_, seq): Message => ({ seq }));

    const library = (contender: string, batchSize: number, groupCount: number, record: boolean) => {
      const prefix = ctx.prefix('fifo');
      const fixed = {
        name: 'events',
        capacity: Math.max(perGroup, batchSize),
        batchSize,
        maxWaitMs: 0,
        delivery: 'at-least-once' as const,
      };
      return measure(
        contender,
        groupCount * perGroup,
        record,
        async (server) => {
          const app = await libraryApp({ url: server.url, prefix, fixed });
          const queue = fixedQueueOf<Message>(app, 'events');
          await inParallel(groupCount, 64, (g) => queue.pushMany(`g${g}`, messages));
          await app.close();
        },
        async (server, countdown, order) => {
          const consumer = batchConsumer<Message>('events', CONCURRENCY, (batch, batchCtx) => {
            for (const message of batch) order.see(batchCtx.group, message.seq);
            countdown.add(batch.length);
          });
          const app = await libraryApp({ url: server.url, prefix, fixed, consumers: [consumer] });
          return () => app.close();
        },
      );
    };

    const groupmq = (groupCount: number, record: boolean) => {
      const namespace = ctx.prefix('groupmq');
      const queueOf = (redis: IORedis) => new GroupQueue<Message>({ redis, namespace, keepCompleted: 0 });
      return measure(
        GROUPMQ,
        groupCount * perGroup,
        record,
        async (server) => {
          const redis = new IORedis(server.url, { maxRetriesPerRequest: null });
          const queue = queueOf(redis);
          await inParallel(groupCount, 64, async (g) => {
            for (const data of messages) await queue.add({ groupId: `g${g}`, data });
          });
          // Closes its client too.
          await queue.close();
        },
        async (server, countdown, order) => {
          const redis = new IORedis(server.url, { maxRetriesPerRequest: null });
          const worker = new GroupWorker<Message>({
            queue: queueOf(redis),
            concurrency: CONCURRENCY,
            handler: async (job) => {
              order.see(job.groupId, job.data.seq);
              countdown.add(1);
            },
          });
          void worker.run();
          return async () => {
            await worker.close(1000);
            if (redis.status === 'ready') await redis.quit();
          };
        },
      );
    };

    const warmupGroups = Math.max(2, Math.round(groups / 10));
    await interleave(ctx, [
      { key: GROUPMQ, round: (_, warmup) => groupmq(warmup ? warmupGroups : groups, !warmup) },
      { key: SINGLE, round: (_, warmup) => library(SINGLE, 1, warmup ? warmupGroups : groups, !warmup) },
      { key: BATCHES, round: (_, warmup) => library(BATCHES, 128, warmup ? warmupGroups : groups, !warmup) },
    ]);
    recorder.note(
      'Throughput is timed from the first message handled to the last, so that start-up (a Nest application context, a GroupMQ Worker) is not; ' +
        'CPU is counted from creating the consumer. The fill before it is not measured. Every contender checks that each group is handled in push order.',
    );
    return recorder.result();
  },
};
