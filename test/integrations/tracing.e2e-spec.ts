import { context, ROOT_CONTEXT, SpanKind, SpanStatusCode, trace, type SpanContext } from '@opentelemetry/api';
import { AsyncLocalStorageContextManager } from '@opentelemetry/context-async-hooks';
import {
  BasicTracerProvider,
  InMemorySpanExporter,
  SimpleSpanProcessor,
  type ReadableSpan,
} from '@opentelemetry/sdk-trace-base';
import { shardOf } from '../../libs/queue/src/redis/keys';
import { recordBatches, recordTasks, useQueueApps } from '@test/support/fixtures';
import { expectErrors } from '@test/support/logs';
import { pollUntil } from '@test/support/testing';

const exporter = new InMemorySpanExporter();
const provider = new BasicTracerProvider({ spanProcessors: [new SimpleSpanProcessor(exporter)] });
const tracer = trace.getTracer('test');

const spans = (name: string) => exporter.getFinishedSpans().filter((span) => span.name === name);
const parentOf = (span: ReadableSpan) => span.parentSpanContext?.spanId;
const linked = (span: ReadableSpan) => span.links.map((link) => link.context.spanId).sort();

const reported = recordBatches<{ n: number }>('events', { concurrency: 4 }, () => {
  // The handler's own work: a child of the batch's process span.
  tracer.startSpan('write report').end();
});
const fed = recordTasks<{ pet: string }>('feeding', { scheduleContext: 'parent' });
const reminded = recordTasks<{ pet: string }>('reminders');
/** Hangs its first attempt past handlerTimeoutMs. */
/** Its first run gives up when its signal says it is overdue, rejecting with the signal's reason. */
const slow = recordTasks<{ pet: string }>('slow', { handlerTimeoutMs: 200 }, (_payload, ctx) =>
  ctx.attempt === 1
    ? new Promise<void>((_resolve, reject) => ctx.signal.addEventListener('abort', () => reject(ctx.signal.reason)))
    : undefined,
);
const single = recordBatches<{ n: number }>('single');
const flaky = recordBatches<{ n: number }>('flaky', {}, (_messages, ctx) => {
  if (ctx.attempt === 1) throw new TypeError('report service down');
});

describe('tracing: OpenTelemetry spans with the real SDK', () => {
  const harness = useQueueApps();
  const fast = { maxWaitMs: 0, shards: 2 };

  beforeAll(() => {
    trace.setGlobalTracerProvider(provider);
    context.setGlobalContextManager(new AsyncLocalStorageContextManager().enable());
  });
  afterAll(() => {
    trace.disable();
    context.disable();
  });
  afterEach(() => exporter.reset());

  it("a request pushes and schedules: no span per message, a send span per script call in the request's trace, batches and tasks link to or continue the request", async () => {
    const { fixed, delay } = await harness.start({
      root: { tracing: true },
      fixed: [{ name: 'events', ...fast }],
      delay: [
        { name: 'feeding', shards: 2 },
        { name: 'reminders', shards: 2 },
      ],
      providers: [reported.consumer, fed.consumer, reminded.consumer],
    });
    const request = tracer.startSpan('GET /games/report');
    await context.with(trace.setSpan(context.active(), request), async () => {
      await Promise.all([
        fixed('events').push('a', { n: 1 }),
        fixed('events').push('b', { n: 2 }),
        fixed('events').pushMany('c', [{ n: 3 }, { n: 4 }]),
      ]);
      await fixed('events').push('a', { n: 5 });
      await delay('feeding').schedule({ pet: 'rex' }, { id: 'feed:rex' });
      await delay('reminders').schedule({ pet: 'rex' }, { id: 'remind:rex' });
    });
    request.end();
    await reported.untilMessages(5);
    await fed.untilTasks(1);
    await reminded.untilTasks(1);
    await pollUntil(() => spans('process events').length === reported.batches.length || undefined, 'batch spans');
    await pollUntil(() => spans('process reminders').length === 1 || undefined, 'task spans');

    const { traceId, spanId } = request.spanContext();
    expect(spans('push events')).toEqual([]);
    expect(spans('pushMany events')).toEqual([]);
    // The first turn's pushes share a call per shard (two shards), the later push has its own.
    const sends = spans('send events');
    expect(sends.length).toBeGreaterThanOrEqual(2);
    expect(sends.length).toBeLessThanOrEqual(3);
    expect(sends.reduce((sum, send) => sum + (send.attributes['messaging.batch.message_count'] as number), 0)).toBe(5);
    for (const send of sends) {
      expect(send.kind).toBe(SpanKind.PRODUCER);
      // Every message of the call was created by the request: the call is its child, and links to it.
      expect(send.spanContext().traceId).toBe(traceId);
      expect(parentOf(send)).toBe(spanId);
      expect(linked(send)).toEqual([spanId]);
      expect(send.attributes).toMatchObject({
        'messaging.system': 'nestjs-redis-queues',
        'messaging.operation.type': 'send',
        'messaging.operation.name': 'send',
        'messaging.destination.name': 'events',
      });
    }

    const processed = spans('process events');
    for (const span of processed) {
      expect(span.kind).toBe(SpanKind.CONSUMER);
      // A new trace, linked to the creation context of its messages: the request that pushed them.
      expect(span.spanContext().traceId).not.toBe(traceId);
      expect(span.attributes).toMatchObject({
        'messaging.operation.type': 'process',
        'messaging.destination.name': 'events',
        'messaging.nestjs_redis_queues.attempt': 1,
        'messaging.nestjs_redis_queues.outcome': 'ack',
      });
      expect(linked(span)).toEqual([spanId]);
      expect(span.links[0].context.traceId).toBe(traceId);
    }
    // The handler's span is a child of its batch's process span.
    const reports = spans('write report');
    expect(reports).toHaveLength(processed.length);
    expect(reports.map(parentOf).sort()).toEqual(processed.map((span) => span.spanContext().spanId).sort());

    const [scheduledFeed] = spans('send feeding');
    expect(spans('schedule feeding')).toEqual([]);
    expect(parentOf(scheduledFeed)).toBe(spanId);
    expect(scheduledFeed.attributes['messaging.batch.message_count']).toBe(1);
    // scheduleContext 'parent': the task's span continues the request's trace, as a child of the request.
    const [feeding] = spans('process feeding');
    expect(feeding.spanContext().traceId).toBe(traceId);
    expect(parentOf(feeding)).toBe(spanId);
    expect(feeding.attributes).toMatchObject({
      'messaging.message.id': 'feed:rex',
      'messaging.nestjs_redis_queues.outcome': 'ack',
    });
    // By default: a trace of its own, linked to the request.
    const [reminding] = spans('process reminders');
    expect(reminding.spanContext().traceId).not.toBe(traceId);
    expect(linked(reminding)).toEqual([spanId]);
    // The payloads came back as they were, the stored context aside.
    expect(fed.tasks[0].payload).toEqual({ pet: 'rex' });
  });

  it("pushes outside any trace carry their call's send span: one span for a turn's pushes, linked to the one request among them", async () => {
    const { fixed } = await harness.start({
      root: { tracing: true },
      fixed: [{ name: 'events', shards: 1, maxWaitMs: 60_000 }],
    });
    const request = tracer.startSpan('POST /games/g0/events');
    // One turn: a request's push and 100 made outside any trace, all to the one shard.
    await Promise.all([
      context.with(trace.setSpan(ROOT_CONTEXT, request), () => fixed('events').push('g0', { n: -1 })),
      ...Array.from({ length: 100 }, (_, n) => fixed('events').push(`g${n % 10}`, { n })),
    ]);
    request.end();
    const [send, ...more] = spans('send events');
    expect(more).toEqual([]);
    expect(send.attributes['messaging.batch.message_count']).toBe(101);
    // Messages of several contexts (and of none): a trace of its own, linked to the request.
    expect(send.parentSpanContext).toBeUndefined();
    expect(linked(send)).toEqual([request.spanContext().spanId]);
    const traceparent = (span: { spanContext(): SpanContext }) =>
      `00-${span.spanContext().traceId}-${span.spanContext().spanId}-01`;
    const entries = await harness.redis.lrange(fixed('events').store.groupKey(0, 'g0'), 0, -1);
    expect(entries).toHaveLength(11);
    expect(entries[0]).toMatch(new RegExp(`^\\[\\d{13},0,"${traceparent(request)}",\\{"n":-1\\}\\]$`));
    for (const entry of entries.slice(1))
      expect(entry).toMatch(new RegExp(`^\\[\\d{13},0,"${traceparent(send)}",\\{"n":\\d+\\}\\]$`));
  });

  it('batches handed over by an acknowledgement (batchSize 1) link to their own requests too', async () => {
    const { fixed } = await harness.start({
      root: { tracing: true },
      fixed: [{ name: 'single', ...fast, batchSize: 1 }],
      providers: [single.consumer],
    });
    // Three pushes, each in a trace of its own, before the consumer's first claim.
    const requests = [1, 2, 3].map((n) => tracer.startSpan(`request ${n}`));
    for (const [n, request] of requests.entries()) {
      await context.with(trace.setSpan(context.active(), request), () => fixed('single').push('g', { n }));
      request.end();
    }
    await single.untilMessages(3);
    await pollUntil(() => spans('process single').length === 3 || undefined, 'batch spans');
    const processed = spans('process single');
    expect(processed.map((span) => linked(span))).toEqual(requests.map((request) => [request.spanContext().spanId]));
  });

  it('reschedule stores its own context with the task; get and the consumer see the payload only', async () => {
    const { delay } = await harness.start({
      root: { tracing: true },
      delay: [{ name: 'reminders', shards: 2 }],
      providers: [reminded.consumer],
    });
    const reminders = delay<{ pet: string }>('reminders');
    await reminders.schedule({ pet: 'rex' }, { id: 'later', delayMs: 60_000 });
    await reminders.shift('later', -10_000);
    expect(await reminders.get('later')).toMatchObject({ payload: { pet: 'rex' }, state: 'scheduled' });
    await reminders.reschedule('later', { delayMs: 0 });
    await reminded.untilTasks(1);
    await pollUntil(() => spans('process reminders').length === 1 || undefined, 'the task span');
    expect(reminded.tasks[0].payload).toEqual({ pet: 'rex' });
    expect(spans('send reminders')).toHaveLength(1);
    const [moved] = spans('reschedule reminders');
    expect(spans('shift reminders')).toHaveLength(1);
    // Moved outside any trace: the task's creation context is the last move's span.
    expect(moved.kind).toBe(SpanKind.PRODUCER);
    expect(moved.attributes['messaging.message.id']).toBe('later');
    expect(linked(spans('process reminders')[0])).toEqual([moved.spanContext().spanId]);
  });

  it('a failing batch records the error and its retry; the next delivery is a span of its own, attempt 2', async () => {
    expectErrors(/report service down/);
    const { fixed } = await harness.start({
      fixed: [
        {
          name: 'flaky',
          ...fast,
          delivery: 'at-least-once',
          backoff: { type: 'exponential', delayMs: 20 },
          tracing: true,
        },
      ],
      providers: [flaky.consumer],
    });
    await fixed('flaky').pushMany('g', [{ n: 1 }, { n: 2 }]);
    await flaky.untilMessages(4);
    await pollUntil(() => spans('process flaky').length === 2 || undefined, 'both deliveries');
    const [push] = spans('send flaky');
    const [failed, retried] = spans('process flaky').sort(
      (a, b) =>
        (a.attributes['messaging.nestjs_redis_queues.attempt'] as number) -
        (b.attributes['messaging.nestjs_redis_queues.attempt'] as number),
    );
    expect(failed.status.code).toBe(SpanStatusCode.ERROR);
    expect(failed.attributes).toMatchObject({
      'error.type': 'TypeError',
      'messaging.nestjs_redis_queues.attempt': 1,
      'messaging.nestjs_redis_queues.outcome': 'retry',
    });
    expect(failed.events.map((event) => event.name)).toEqual(['exception', 'retry']);
    expect(failed.events[0].attributes).toMatchObject({ 'exception.message': 'report service down' });
    expect(retried.status.code).not.toBe(SpanStatusCode.ERROR);
    expect(retried.attributes).toMatchObject({
      'messaging.nestjs_redis_queues.attempt': 2,
      'messaging.nestjs_redis_queues.outcome': 'ack',
    });
    // Both messages carry their call's send span: one link.
    for (const span of [failed, retried]) expect(linked(span)).toEqual([push.spanContext().spanId]);
  });

  it('a task whose handler times out: its span has the HandlerTimeoutError, a handler_timeout event and the retry', async () => {
    const { delay } = await harness.start({
      delay: [{ name: 'slow', shards: 1, tracing: true, backoff: { type: 'fixed', delayMs: 20 } }],
      providers: [slow.consumer],
    });
    await delay('slow').schedule({ pet: 'rex' }, { id: 'late' });
    await slow.untilTasks(2);
    await pollUntil(() => spans('process slow').length === 2 || undefined, 'both attempts');
    const [timedOut, retried] = spans('process slow');
    expect(timedOut.attributes).toMatchObject({
      'error.type': 'HandlerTimeoutError',
      'messaging.nestjs_redis_queues.attempt': 1,
      'messaging.nestjs_redis_queues.outcome': 'retry',
    });
    expect(timedOut.events.map((event) => event.name)).toEqual(['handler_timeout', 'exception', 'retry']);
    expect(retried.attributes).toMatchObject({
      'messaging.nestjs_redis_queues.attempt': 2,
      'messaging.nestjs_redis_queues.outcome': 'ack',
    });
  });

  it('tracing off writes nothing extra to Redis: entries are byte-identical, and MEMORY USAGE says what tracing costs', async () => {
    const { fixed } = await harness.start({
      root: { tracing: true },
      fixed: [
        { name: 'traced', shards: 1, maxWaitMs: 60_000 },
        { name: 'plain', shards: 1, maxWaitMs: 60_000, tracing: false },
      ],
    });
    const messages = Array.from({ length: 50 }, (_, n) => ({ n, text: 'a message of some length' }));
    for (const name of ['traced', 'plain']) for (const message of messages) await fixed(name).push('g', message);
    const listOf = (name: string) => fixed(name).store.keys.member(shardOf('g', 1), 'g', 'g');
    const plain = await harness.redis.lrange(listOf('plain'), 0, -1);
    const traced = await harness.redis.lrange(listOf('traced'), 0, -1);
    expect(plain).toHaveLength(50);
    plain.forEach((entry, n) =>
      expect(entry).toMatch(new RegExp(`^\\[\\d{13},${escape(JSON.stringify(messages[n]))}\\]$`)),
    );
    traced.forEach((entry, n) =>
      expect(entry).toMatch(
        new RegExp(`^\\[\\d{13},0,"00-[0-9a-f]{32}-[0-9a-f]{16}-01",${escape(JSON.stringify(messages[n]))}\\]$`),
      ),
    );
    expect(spans('send plain')).toHaveLength(0);
    const sent = spans('send traced').map((span) => span.attributes['messaging.batch.message_count'] as number);
    expect(sent.reduce((sum, count) => sum + count, 0)).toBe(50);
    const usage = async (name: string) =>
      Number(await harness.redis.call('MEMORY', 'USAGE', listOf(name), 'SAMPLES', '0'));
    const [withTracing, without] = [await usage('traced'), await usage('plain')];
    const plainBytes = plain.reduce((sum, entry) => sum + entry.length, 0);
    // A plain list holds the entries and the list's own overhead, nothing more.
    expect(without).toBeLessThan(plainBytes + 1024);
    // The carrier and its marker, `0,"<traceparent>",`, are 60 bytes a message, whatever the message.
    expect((withTracing - without) / 50).toBeGreaterThanOrEqual(60);
    expect((withTracing - without) / 50).toBeLessThan(70);
  });
});

function escape(text: string): string {
  return text.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');
}
