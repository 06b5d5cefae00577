import type * as Otel from '@opentelemetry/api';
import { loadOptional } from '../optional-dependency';
import type { QueueKind } from '../interfaces';

/** `messaging.system` of every span, and the tracer's name. */
export const MESSAGING_SYSTEM = 'nestjs-redis-queues';
/** Library-specific attributes, named as the messaging conventions name a system's own. */
export const ATTRIBUTES = Object.freeze({
  group: 'messaging.nestjs_redis_queues.group',
  attempt: 'messaging.nestjs_redis_queues.attempt',
  outcome: 'messaging.nestjs_redis_queues.outcome',
  expired: 'messaging.nestjs_redis_queues.expired_count',
});
/**
 * Most links of one process span: one per distinct creation context of its messages (a pushMany's
 * share one), the first ones of the batch. The SDK's default span limit is the same.
 */
export const MAX_LINKS = 128;

export type SendOperation = 'push' | 'pushMany' | 'schedule' | 'reschedule' | 'shift';
/** How a span ended: acknowledged, to be delivered again, dead-lettered, or no longer this consumer's. */
export type ProcessOutcome = 'ack' | 'retry' | 'dead' | 'paused' | 'failed' | 'lease_lost' | 'abandoned';

/**
 * The spans of one traced queue, per the OpenTelemetry messaging conventions. Built only for a queue
 * with tracing on: `@opentelemetry/api` is loaded then, never otherwise. Spans go to whatever tracer
 * provider the application registered (none: the API's no-op, and nothing is stored).
 */
export class QueueTracer {
  private readonly api: typeof Otel;
  private readonly tracer: Otel.Tracer;
  private readonly sendKind: Otel.SpanKind;
  private readonly base: Otel.Attributes;
  /** Per operation, its span's name and fixed attributes: built once, not per push. */
  private readonly sends = new Map<SendOperation, { name: string; attributes: Otel.Attributes }>();

  constructor(
    private readonly queue: string,
    kind: QueueKind,
  ) {
    this.api = loadOptional<typeof Otel>('@opentelemetry/api', `tracing on the ${kind} queue "${queue}"`);
    this.tracer = this.api.trace.getTracer(MESSAGING_SYSTEM);
    this.sendKind = this.api.SpanKind.PRODUCER;
    this.base = Object.freeze({ 'messaging.system': MESSAGING_SYSTEM, 'messaging.destination.name': queue });
  }

  /**
   * A PRODUCER span around one write, a child of the caller's active context: `write` gets the span's
   * context as a carrier to store (undefined when no SDK records it), and the span ends when the write
   * settles.
   */
  send<R>(
    operation: SendOperation,
    attributes: Otel.Attributes,
    write: (carrier: string | undefined) => Promise<R>,
  ): Promise<R> {
    let send = this.sends.get(operation);
    if (send === undefined) {
      const fixed = { ...this.base, 'messaging.operation.type': 'send', 'messaging.operation.name': operation };
      this.sends.set(operation, (send = { name: `${operation} ${this.queue}`, attributes: Object.freeze(fixed) }));
    }
    const span = this.tracer.startSpan(send.name, { kind: this.sendKind, attributes: send.attributes });
    span.setAttributes(attributes);
    let written: Promise<R>;
    try {
      written = write(this.carrierOf(span.spanContext()));
    } catch (error) {
      failed(span, error, this.api);
      span.end();
      return Promise.reject(error as Error);
    }
    return written.then(
      (result) => {
        span.end();
        return result;
      },
      (error: unknown) => {
        failed(span, error, this.api);
        span.end();
        throw error;
      },
    );
  }

  /**
   * A CONSUMER `process` span for one delivery (a batch, or a task), a new trace linked to the creation
   * context of its messages, or (`parent`) a child of the one it carries.
   */
  process(attributes: Otel.Attributes, carriers: readonly string[] | undefined, parent = false): ProcessSpan {
    const { api } = this;
    const contexts: Otel.SpanContext[] = [];
    for (const carrier of carriers ?? []) {
      if (contexts.length === MAX_LINKS) break;
      const context = this.contextOf(carrier);
      if (context) contexts.push(context);
    }
    const parentContext =
      parent && contexts.length > 0 ? api.trace.setSpanContext(api.ROOT_CONTEXT, contexts[0]) : api.ROOT_CONTEXT;
    const span = this.tracer.startSpan(
      `process ${this.queue}`,
      {
        kind: api.SpanKind.CONSUMER,
        attributes: {
          ...this.base,
          'messaging.operation.type': 'process',
          'messaging.operation.name': 'process',
          ...attributes,
        },
        links: parent ? [] : contexts.map((context) => ({ context })),
      },
      parentContext,
    );
    return new ProcessSpan(span, api.trace.setSpan(parentContext, span), api);
  }

  private carrierOf(context: Otel.SpanContext): string | undefined {
    if (!this.api.isSpanContextValid(context)) return undefined;
    const flags = context.traceFlags & 0xff;
    const parent = `00-${context.traceId}-${context.spanId}-${flags < 16 ? '0' : ''}${flags.toString(16)}`;
    const state = context.traceState?.serialize();
    // The carrier ends at a quote, and is stored inside one (see traced-json.ts).
    return state && !/["\\]/.test(state) ? parent + state : parent;
  }

  /**
   * Undefined for a carrier that is not a traceparent this library wrote. Only its shape is checked
   * (a link per message: the ids' own checks cost more than the rest of the link); of the flags, only
   * "sampled" is kept.
   */
  private contextOf(carrier: string): Otel.SpanContext | undefined {
    if (carrier.length < 55 || carrier.charCodeAt(35) !== 45 || carrier.charCodeAt(52) !== 45) return undefined;
    const context: Otel.SpanContext = {
      traceId: carrier.slice(3, 35),
      spanId: carrier.slice(36, 52),
      traceFlags: carrier.charCodeAt(54) & 1,
      isRemote: true,
    };
    if (carrier.length > 55) context.traceState = this.api.createTraceState(carrier.slice(55));
    return context;
  }
}

/** A delivery's process span: the handler runs in its context, and it ends with the delivery's outcome. */
export class ProcessSpan {
  private ended = false;

  constructor(
    private readonly span: Otel.Span,
    private readonly context: Otel.Context,
    private readonly api: typeof Otel,
  ) {}

  /** Runs the handler with this span active, so that the spans it starts are its children. */
  run<R>(handler: () => R): R {
    return this.api.context.with(this.context, handler);
  }

  /** The delivery failed: the exception, with the error status. */
  failed(error: unknown): void {
    failed(this.span, error, this.api);
  }

  /** An in-process attempt failed and the next one follows: the exception, not (yet) the error status. */
  retrying(error: unknown, attributes: Otel.Attributes): void {
    if (error instanceof Error) this.span.recordException(error);
    this.span.addEvent('retry', attributes);
  }

  /** The lease ran out under the handler: the delivery is another consumer's now. */
  leaseLost(error?: unknown): void {
    if (error instanceof Error) this.span.recordException(error);
    this.span.addEvent('lease_lost');
    this.end('lease_lost');
  }

  /** Something that happened to the delivery (`retry`, `dead_letter`, `group_paused`, `lease_lost`, `handler_timeout`). */
  event(name: string, attributes?: Otel.Attributes): void {
    this.span.addEvent(name, attributes);
  }

  /** Ends the span once, with the delivery's outcome; later calls are ignored. */
  end(outcome: ProcessOutcome, attributes?: Otel.Attributes): void {
    if (this.ended) return;
    this.ended = true;
    if (attributes) this.span.setAttributes(attributes);
    this.span.setAttribute(ATTRIBUTES.outcome, outcome);
    this.span.end();
  }
}

/** What a delivery calls once its handler is overdue: `free`, and a traced one marks its span then. */
export function overdueHook(span: ProcessSpan | undefined, free: () => void): () => void {
  if (!span) return free;
  return () => {
    span.event('handler_timeout');
    free();
  };
}

function failed(span: Otel.Span, error: unknown, api: typeof Otel): void {
  span.setAttribute('error.type', error instanceof Error ? error.name || error.constructor.name : typeof error);
  if (error instanceof Error) span.recordException(error);
  span.setStatus({ code: api.SpanStatusCode.ERROR, message: error instanceof Error ? error.message : String(error) });
}
