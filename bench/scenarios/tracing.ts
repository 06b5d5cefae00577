import { context, trace } from '@opentelemetry/api';
import { AsyncLocalStorageContextManager } from '@opentelemetry/context-async-hooks';
import {
  BasicTracerProvider,
  BatchSpanProcessor,
  ParentBasedSampler,
  TraceIdRatioBasedSampler,
  type SpanExporter,
} from '@opentelemetry/sdk-trace-base';
import { batchConsumer, fixedQueueOf, libraryApp } from '../contenders/library';
import { gameEvents, type GameEvent } from '../contenders/payloads';
import { interleave, scaled, type BenchContext, type Scenario } from '../harness/context';
import { Countdown, cpuMs, inParallel, now } from '../harness/load';
import { Recorder, type MetricSpec } from '../harness/results';
import type { BenchServer } from '../harness/servers';

const GROUPS = 1000;
const IN_FLIGHT = 1000;
const BATCH = 128;
const CONCURRENCY = 16;
const DRAIN_TIMEOUT_MS = 120_000;
const PUSH_OFF = 'push, tracing off';
const PUSH_ON = 'push, tracing on';
const PUSH_SAMPLED = 'push, tracing on, 1 in 10 sampled';
/** Pushes made inside requests' spans, as an HTTP handler's are: each message then carries its request's context. */
const PUSH_OFF_IN_REQUEST = 'push in a request, tracing off';
const PUSH_ON_IN_REQUEST = 'push in a request, tracing on';
/** Requests whose spans the pushes run in, one after another. */
const REQUESTS = 1000;
/** Production setups sample: what a push costs when most spans are not recorded. */
const SAMPLED_RATIO = 0.1;
const CONSUME_OFF = 'consume, tracing off';
const CONSUME_ON = 'consume, tracing on';

const PUSHES: MetricSpec = { label: 'push throughput', unit: 'msg/s', better: 'higher' };
const DRAIN: MetricSpec = { label: 'drain throughput', unit: 'msg/s', better: 'higher' };
const NODE_CPU: MetricSpec = { label: 'Node CPU per 100k msgs', unit: 'CPU ms', better: 'lower' };
const BYTES: MetricSpec = { label: 'Redis bytes per message (MEMORY USAGE of the queue)', unit: 'B', better: 'lower' };

/** An exporter that drops every span: what is measured is the library's and the SDK's work, not an export. */
const discard: SpanExporter = {
  export: (_spans, done) => done({ code: 0 }),
  shutdown: async () => undefined,
};

/** The default queue (ordered at-most-once), due as soon as it holds anything. */
const queueOptions = (tracing: boolean) => ({
  name: 'events',
  capacity: 1000,
  batchSize: BATCH,
  maxWaitMs: 0,
  ttlMs: 86_400_000,
  tracing,
});

export const tracingScenario: Scenario = {
  name: 'tracing',
  summary: 'FixedQueue push and consume with OpenTelemetry tracing on (SDK, no-op exporter) vs off',
  async run(ctx: BenchContext) {
    const messages = scaled(ctx, 100_000, 100);
    const perGroup = scaled(ctx, 500, 1);
    const total = GROUPS * perGroup;
    const events = gameEvents(GROUPS);
    const recorder = new Recorder(
      'tracing',
      `Tracing on vs off: push ${messages.toLocaleString('en')} messages to ${GROUPS.toLocaleString('en')} groups, ${IN_FLIGHT.toLocaleString('en')} in flight; ` +
        `drain ${total.toLocaleString('en')} (${perGroup} a group, each pushed on its own) in batches of ${BATCH}, ${CONCURRENCY} at once`,
      { messages, groups: GROUPS, inFlight: IN_FLIGHT, perGroup, total, batch: BATCH, concurrency: CONCURRENCY },
    )
      .contender(PUSH_OFF, 'FixedQueue.push, tracing off')
      .contender(PUSH_ON, 'FixedQueue.push, tracing on: a send span per script call, its context stored')
      .contender(PUSH_SAMPLED, `FixedQueue.push, tracing on, the SDK sampling ${SAMPLED_RATIO * 100} % of traces`)
      .contender(
        PUSH_OFF_IN_REQUEST,
        `FixedQueue.push inside one of ${REQUESTS.toLocaleString('en')} request spans, tracing off`,
      )
      .contender(
        PUSH_ON_IN_REQUEST,
        `FixedQueue.push inside one of ${REQUESTS.toLocaleString('en')} request spans, tracing on`,
      )
      .contender(CONSUME_OFF, '@BatchConsumer, tracing off')
      .contender(CONSUME_ON, '@BatchConsumer, tracing on: a process span per batch, a link per message')
      .ratio('push: tracing on / off', PUSHES, PUSH_ON, PUSH_OFF, { op: '>=', value: 0.7 })
      .ratio(`push: tracing on, ${SAMPLED_RATIO * 100} % sampled / off`, PUSHES, PUSH_SAMPLED, PUSH_OFF)
      .ratio('push in a request: tracing on / off', PUSHES, PUSH_ON_IN_REQUEST, PUSH_OFF_IN_REQUEST)
      .ratio('consume: tracing on / off', DRAIN, CONSUME_ON, CONSUME_OFF, { op: '>=', value: 0.8 });

    const provider = new BasicTracerProvider({ spanProcessors: [new BatchSpanProcessor(discard)] });
    const sampledProvider = new BasicTracerProvider({
      sampler: new ParentBasedSampler({ root: new TraceIdRatioBasedSampler(SAMPLED_RATIO) }),
      spanProcessors: [new BatchSpanProcessor(discard)],
    });
    /** Queues take their tracer from the provider registered when their application starts. */
    const register = (chosen: BasicTracerProvider) => {
      trace.disable();
      trace.setGlobalTracerProvider(chosen);
    };
    const contextManager = new AsyncLocalStorageContextManager().enable();
    // Registered for every contender alike: tracing off must cost nothing whatever the application set up.
    trace.setGlobalTracerProvider(provider);
    context.setGlobalContextManager(contextManager);
    // As in an application whose requests are traced: the context manager has run a context (Node then
    // tracks async context through every promise), before any contender, whether its queue traces or not.
    context.with(context.active(), () => undefined);

    const tracer = provider.getTracer('bench');
    const requests = Array.from({ length: REQUESTS }, (_, n) =>
      trace.setSpan(context.active(), tracer.startSpan(`GET /games/${n}`)),
    );
    const push = async (contender: string, count: number, record: boolean) => {
      const tracing = contender !== PUSH_OFF && contender !== PUSH_OFF_IN_REQUEST;
      const inRequest = contender === PUSH_OFF_IN_REQUEST || contender === PUSH_ON_IN_REQUEST;
      register(contender === PUSH_SAMPLED ? sampledProvider : provider);
      const server = await ctx.servers.open();
      try {
        const app = await libraryApp({
          url: server.url,
          prefix: ctx.prefix('trace-push'),
          fixed: queueOptions(tracing),
        });
        const queue = fixedQueueOf<GameEvent>(app, 'events');
        const cpu = process.cpuUsage();
        const started = now();
        await inParallel(count, IN_FLIGHT, (i) =>
          inRequest
            ? context.with(requests[i % REQUESTS], () => queue.push(`game-${i % GROUPS}`, events[i % GROUPS]))
            : queue.push(`game-${i % GROUPS}`, events[i % GROUPS]),
        );
        const elapsed = now() - started;
        const nodeCpu = cpuMs(cpu);
        await app.close();
        if (!record) return;
        recorder.record(PUSHES, contender, (count / elapsed) * 1000);
        recorder.record(NODE_CPU, contender, (nodeCpu * 100_000) / count);
      } finally {
        await server.close();
      }
    };

    const consume = async (tracing: boolean, groups: number, record: boolean) => {
      const server = await ctx.servers.open();
      const prefix = ctx.prefix('trace-consume');
      const count = groups * perGroup;
      register(provider);
      try {
        // One push per message, so that every message carries a context of its own: a link each.
        const producer = await libraryApp({ url: server.url, prefix, fixed: queueOptions(tracing) });
        const queue = fixedQueueOf<GameEvent>(producer, 'events');
        await inParallel(count, IN_FLIGHT, (i) => queue.push(`game-${i % groups}`, events[i % GROUPS]));
        const bytes = await prefixBytes(server, prefix);
        await producer.close();
        const countdown = new Countdown(count);
        const cpu = process.cpuUsage();
        const started = now();
        const app = await libraryApp({
          url: server.url,
          prefix,
          fixed: queueOptions(tracing),
          consumers: [batchConsumer<GameEvent>('events', CONCURRENCY, (batch) => countdown.add(batch.length))],
        });
        const drained = await countdown.within(DRAIN_TIMEOUT_MS, 'tracing drain');
        const nodeCpu = cpuMs(cpu);
        await app.close();
        if (!record) return;
        const contender = tracing ? CONSUME_ON : CONSUME_OFF;
        recorder.record(DRAIN, contender, (count / (drained - started)) * 1000);
        recorder.record(NODE_CPU, contender, (nodeCpu * 100_000) / count);
        recorder.record(BYTES, contender, bytes / count);
      } finally {
        await server.close();
      }
    };

    try {
      const warmupGroups = Math.max(1, Math.round(GROUPS / 10));
      await interleave(ctx, [
        ...[PUSH_OFF, PUSH_ON, PUSH_SAMPLED, PUSH_OFF_IN_REQUEST, PUSH_ON_IN_REQUEST].map((key) => ({
          key,
          round: (_: number, warmup: boolean) => push(key, warmup ? messages / 10 : messages, !warmup),
        })),
        { key: CONSUME_OFF, round: (_, warmup) => consume(false, warmup ? warmupGroups : GROUPS, !warmup) },
        { key: CONSUME_ON, round: (_, warmup) => consume(true, warmup ? warmupGroups : GROUPS, !warmup) },
      ]);
    } finally {
      await provider.shutdown();
      await sampledProvider.shutdown();
      trace.disable();
      context.disable();
    }
    recorder.note(
      'The SDK (BasicTracerProvider, BatchSpanProcessor, an exporter that drops the spans, the async-hooks context manager) is registered for every contender; ' +
        'the queue option `tracing` alone differs. ' +
        `Pushes "in a request" each run inside one of ${REQUESTS.toLocaleString('en')} open request spans (context.with, on and off alike), so each message carries its request's context; the others run outside any span, and their messages carry their send span's. ` +
        'The consume fill pushes every message on its own (not timed), so a traced batch links to 128 contexts, the most there are. ' +
        'Bytes per message: MEMORY USAGE (SAMPLES 0) of every key of the queue after the fill, over the messages.',
    );
    return recorder.result();
  },
};

/** Bytes Redis holds for every key of a prefix (the group lists, and the indexes beside them), read exactly. */
async function prefixBytes(server: BenchServer, prefix: string): Promise<number> {
  let bytes = 0;
  let cursor = '0';
  do {
    const [next, keys] = await server.admin.scan(cursor, 'MATCH', `${prefix}:*`, 'COUNT', 1000);
    cursor = next;
    const pipeline = server.admin.pipeline();
    for (const key of keys) pipeline.call('MEMORY', 'USAGE', key, 'SAMPLES', '0');
    for (const [, used] of (await pipeline.exec()) ?? []) bytes += Number(used ?? 0);
  } while (cursor !== '0');
  return bytes;
}
