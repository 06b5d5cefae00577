import { context, createTraceState, ROOT_CONTEXT, trace, TraceFlags } from '@opentelemetry/api';
import { AsyncLocalStorageContextManager } from '@opentelemetry/context-async-hooks';
import { BasicTracerProvider, InMemorySpanExporter, SimpleSpanProcessor } from '@opentelemetry/sdk-trace-base';
import { MAX_LINKS, QueueTracer } from './queue-tracer';

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

  /** The carrier a push stores when the caller's span has this trace state. */
  const carrierUnder = async (state?: string): Promise<string | undefined> => {
    const parent = trace.wrapSpanContext({
      traceId: '0af7651916cd43dd8448eb211c80319c',
      spanId: 'b7ad6b7169203331',
      traceFlags: TraceFlags.SAMPLED,
      traceState: state === undefined ? undefined : createTraceState(state),
    });
    let stored: string | undefined;
    await context.with(trace.setSpan(ROOT_CONTEXT, parent), () =>
      tracer.send('push', {}, async (carrier) => void (stored = carrier)),
    );
    return stored;
  };

  it('stores a traceparent of the producer span, with the trace state unless it would need escaping', async () => {
    const plain = await carrierUnder();
    const [span] = exporter.getFinishedSpans();
    expect(plain).toBe(`00-${span.spanContext().traceId}-${span.spanContext().spanId}-01`);
    expect(span.spanContext().traceId).toBe('0af7651916cd43dd8448eb211c80319c');
    expect(await carrierUnder('congo=t61rcWkgMzE')).toMatch(/^00-[0-9a-f]{32}-[0-9a-f]{16}-01congo=t61rcWkgMzE$/);
    expect(await carrierUnder('k=a"b')).toHaveLength(55);
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
    await expect(tracer.send('pushMany', {}, () => Promise.reject(error))).rejects.toBe(error);
    await expect(
      tracer.send('push', {}, () => {
        throw error;
      }),
    ).rejects.toBe(error);
    for (const span of exporter.getFinishedSpans()) {
      expect(span.status.code).toBe(2);
      expect(span.attributes['error.type']).toBe('RangeError');
    }
  });
});
