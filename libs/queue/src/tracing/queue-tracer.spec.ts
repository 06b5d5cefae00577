import { context, createTraceState, ROOT_CONTEXT, SpanKind, trace, TraceFlags, type Span } from '@opentelemetry/api';
import { AsyncLocalStorageContextManager } from '@opentelemetry/context-async-hooks';
import { BasicTracerProvider, InMemorySpanExporter, SimpleSpanProcessor } from '@opentelemetry/sdk-trace-base';
import { withCarrier } from '../redis/traced-json';
import { CreationContexts, MAX_LINKS } from './creation-contexts';
import { QueueTracer } from './queue-tracer';

describe('QueueTracer', () => {
  const exporter = new InMemorySpanExporter();
  const provider = new BasicTracerProvider({ spanProcessors: [new SimpleSpanProcessor(exporter)] });
  let tracer: QueueTracer;

  beforeAll(() => {
    trace.setGlobalTracerProvider(provider);
    context.setGlobalContextManager(new AsyncLocalStorageContextManager().enable());
    tracer = new QueueTracer('q', 'fixed');
  });
  afterAll(() => {
    trace.disable();
    context.disable();
  });
  afterEach(() => exporter.reset());

  const parent = (state?: string, spanId = 'b7ad6b7169203331') =>
    trace.wrapSpanContext({
      traceId: '0af7651916cd43dd8448eb211c80319c',
      spanId,
      traceFlags: TraceFlags.SAMPLED,
      traceState: state === undefined ? undefined : createTraceState(state),
    });
  /** The creation context a message made under the caller's span `span` stores. */
  const creationUnder = (span: Span) => context.with(trace.setSpan(ROOT_CONTEXT, span), () => tracer.creation());
  /** Creation contexts of messages stored with these carriers (undefined: none). */
  const originsOf = (...carriers: (string | undefined)[]) => {
    const origins = new CreationContexts();
    for (const carrier of carriers) origins.add(carrier === undefined ? '{}' : withCarrier(carrier, '{}'));
    return origins;
  };

  it("a message's creation context is the caller's span, trace state included unless it would need escaping; no span is made", () => {
    expect(creationUnder(parent())).toBe('00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01');
    expect(creationUnder(parent('congo=t61rcWkgMzE'))).toBe(
      '00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01congo=t61rcWkgMzE',
    );
    expect(creationUnder(parent('k=a"b'))).toHaveLength(55);
    expect(tracer.creation()).toBeUndefined();
    expect(exporter.getFinishedSpans()).toEqual([]);
  });

  it("a send span links to each message's creation context and is a child of the only one; messages with none get none", async () => {
    const request = creationUnder(parent())!;
    let stored: string | undefined = 'not called';
    await tracer.send('send', originsOf(request, request), { 'messaging.batch.message_count': 2 }, async (carrier) => {
      stored = carrier;
    });
    const [span] = exporter.getFinishedSpans();
    expect(stored).toBeUndefined();
    expect(span.kind).toBe(SpanKind.PRODUCER);
    expect(span.name).toBe('send q');
    expect(span.attributes).toMatchObject({
      'messaging.operation.type': 'send',
      'messaging.destination.name': 'q',
      'messaging.batch.message_count': 2,
    });
    expect(span.parentSpanContext?.spanId).toBe('b7ad6b7169203331');
    expect(span.links.map((link) => link.context.spanId)).toEqual(['b7ad6b7169203331']);
  });

  it('a send span of messages from several contexts, or none, starts a trace and gives its own context to those with none', async () => {
    const first = creationUnder(parent(undefined, '00000000000000a1'))!;
    const second = creationUnder(parent(undefined, '00000000000000a2'))!;
    let stored: string | undefined;
    await tracer.send('send', originsOf(first, undefined, second, first), {}, async (carrier) => {
      stored = carrier;
    });
    const [span] = exporter.getFinishedSpans();
    expect(span.parentSpanContext).toBeUndefined();
    expect(span.links.map((link) => link.context.spanId)).toEqual(['00000000000000a1', '00000000000000a2']);
    expect(stored).toBe(`00-${span.spanContext().traceId}-${span.spanContext().spanId}-01`);
  });

  it("sendOne stores the caller's creation context, or the span's outside any trace", async () => {
    const stored: (string | undefined)[] = [];
    const write = async (carrier: string | undefined) => void stored.push(carrier);
    await context.with(trace.setSpan(ROOT_CONTEXT, parent()), () => tracer.sendOne('shift', {}, write));
    await tracer.sendOne('reschedule', {}, write);
    const [shift, reschedule] = exporter.getFinishedSpans();
    expect(stored[0]).toBe('00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01');
    expect(shift.parentSpanContext?.spanId).toBe('b7ad6b7169203331');
    expect(stored[1]).toBe(`00-${reschedule.spanContext().traceId}-${reschedule.spanContext().spanId}-01`);
    expect(reschedule.parentSpanContext).toBeUndefined();
  });

  it('links a process span to each valid carrier, trace state included, at most MAX_LINKS, skipping malformed ones', () => {
    const carrier = (n: number) => `00-0af7651916cd43dd8448eb211c80319c-${n.toString(16).padStart(16, '0')}-01`;
    const carriers = [
      carrier(1) + 'k=v',
      'not a traceparent',
      ...Array.from({ length: 200 }, (_, n) => carrier(n + 2)),
    ];
    tracer.process({}, carriers).end('ack');
    const [span] = exporter.getFinishedSpans();
    expect(span.links).toHaveLength(MAX_LINKS);
    expect(span.links[0].context).toMatchObject({ spanId: '0000000000000001', traceFlags: 1, isRemote: true });
    expect(span.links[0].context.traceState?.get('k')).toBe('v');
    expect(span.parentSpanContext).toBeUndefined();
  });

  it('makes the process span a child of the carrier instead, when asked', () => {
    tracer.process({}, ['00-0af7651916cd43dd8448eb211c80319c-00f067aa0ba902b7-01'], true).end('ack');
    const [span] = exporter.getFinishedSpans();
    expect(span.links).toEqual([]);
    expect(span.spanContext().traceId).toBe('0af7651916cd43dd8448eb211c80319c');
    expect(span.parentSpanContext?.spanId).toBe('00f067aa0ba902b7');
  });

  it('a failed write is an error span, and the write still rejects with its error', async () => {
    const error = new RangeError('too big');
    await expect(tracer.send('send', originsOf(undefined), {}, () => Promise.reject(error))).rejects.toBe(error);
    await expect(
      tracer.sendOne('shift', {}, () => {
        throw error;
      }),
    ).rejects.toBe(error);
    expect(exporter.getFinishedSpans()).toHaveLength(2);
    for (const span of exporter.getFinishedSpans()) {
      expect(span.status.code).toBe(2);
      expect(span.attributes['error.type']).toBe('RangeError');
    }
  });
});
