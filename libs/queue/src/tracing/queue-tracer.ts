import type * as Otel from '@opentelemetry/api';
import { loadOptional } from '../optional-dependency';
import type { QueueKind } from '../interfaces';
import { CreationContexts, MAX_LINKS } from './creation-contexts';

/** `messaging.system` of every span, and the tracer's name. */
export const MESSAGING_SYSTEM = 'nestjs-redis-queues';
/** Library-specific attributes, named as the messaging conventions name a system's own. */
export const ATTRIBUTES = Object.freeze({
  group: 'messaging.nestjs_redis_queues.group',
  attempt: 'messaging.nestjs_redis_queues.attempt',
  outcome: 'messaging.nestjs_redis_queues.outcome',
  expired: 'messaging.nestjs_redis_queues.expired_count',
});
/** Messages a send span's script call wrote (a conventions' attribute). */
export const MESSAGE_COUNT = 'messaging.batch.message_count';

/** A coalesced script call of pushes or schedules (`send`), or one move of a task. */
export type SendOperation = 'send' | 'reschedule' | 'shift';
/** How a span ended: acknowledged, to be delivered again, dead-lettered, or no longer this consumer's. */
export type ProcessOutcome = 'ack' | 'retry' | 'dead' | 'paused' | 'failed' | 'lease_lost' | 'abandoned';

/**
 * The spans of one traced queue, per the OpenTelemetry messaging conventions. Built only for a queue
 * with tracing on: `@opentelemetry/api` is loaded then, never otherwise. Spans go to whatever tracer
 * provider the application registered (none: the API's no-op, and nothing is stored).
 *
 * A message is not a span of its own: it stores its creation context (the caller's active span, see
 * `creation`), and each script call that writes messages is one `send` span linked to those contexts.
 * A push then costs a context lookup, and spans are made per call, not per message.
 */
export class QueueTracer {
  private readonly api: typeof Otel;
  private readonly tracer: Otel.Tracer;
  private readonly sendKind: Otel.SpanKind;
  private readonly base: Otel.Attributes;
  /** Per operation, its span's name and fixed attributes: built once, not per call. */
  private readonly sends = new Map<SendOperation, { name: string; attributes: Otel.Attributes }>();
  /** The span context `creation` saw last, and its carrier: a request's pushes mostly come in a row. */
  private lastContext: Otel.SpanContext | undefined;
  private lastCarrier: string | undefined;

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
   * The creation context of a message made now, as the carrier it stores: the caller's active span (a
   * request's, a handler's). Undefined outside any trace, or when no SDK records one: the message then
   * takes the context of the send span that writes it.
   */
  creation(): string | undefined {
    const context = this.api.trace.getSpanContext(this.api.context.active());
    if (context === undefined) return undefined;
    if (context !== this.lastContext) {
      this.lastContext = context;
      this.lastCarrier = this.carrierOf(context);
    }
    return this.lastCarrier;
  }

  /**
   * A PRODUCER span around one script call that writes messages (the conventions' "send"), linked to the
   * creation context of each, and a child of it when every message carries that same one (a request
   * that pushed alone); otherwise the root of a trace of its own. `write` gets the span's carrier for
   * the messages that carry none (undefined when none does, or no SDK records it); the span ends when
   * the write settles: it is what is held across the round trip, once per call.
   */
  send<R>(
    operation: SendOperation,
    origins: CreationContexts,
    attributes: Otel.Attributes,
    write: (carrier: string | undefined) => Promise<R>,
  ): Promise<R> {
    const { api } = this;
    let send = this.sends.get(operation);
    if (send === undefined) {
      const fixed = { ...this.base, 'messaging.operation.type': 'send', 'messaging.operation.name': operation };
      this.sends.set(operation, (send = { name: `${operation} ${this.queue}`, attributes: Object.freeze(fixed) }));
    }
    const links: Otel.Link[] = [];
    for (const carrier of origins.carriers) {
      const context = this.contextOf(carrier, false);
      if (context) links.push({ context });
    }
    const sole = origins.sole === undefined ? undefined : links[0]?.context;
    const parent = sole === undefined ? api.ROOT_CONTEXT : api.trace.setSpanContext(api.ROOT_CONTEXT, sole);
    const span = this.tracer.startSpan(send.name, { kind: this.sendKind, attributes: send.attributes, links }, parent);
    span.setAttributes(attributes);
    let written: Promise<R>;
    try {
      written = write(origins.bare > 0 ? this.carrierOf(span.spanContext()) : undefined);
    } catch (error) {
      failed(span, error, api);
      span.end();
      return Promise.reject(error as Error);
    }
    return written.then(
      (result) => {
        span.end();
        return result;
      },
      (error: unknown) => {
        failed(span, error, api);
        span.end();
        throw error;
      },
    );
  }

  /**
   * `send` for one message made now (a task's move): it stores the caller's creation context, or the
   * span's outside any trace.
   */
  sendOne<R>(
    operation: SendOperation,
    attributes: Otel.Attributes,
    write: (carrier: string | undefined) => Promise<R>,
  ): Promise<R> {
    const origins = new CreationContexts();
    const creation = this.creation();
    origins.addCarrier(creation);
    return this.send(operation, origins, attributes, (carrier) => write(creation ?? carrier));
  }

  /**
   * A CONSUMER `process` span for one delivery (a batch, or a task), a new trace linked to the creation
   * context of its messages, or (`parent`) a child of the one it carries.
   */
  process(attributes: Otel.Attributes, carriers: readonly string[] | undefined, parent = false): ProcessSpan {
    const { api } = this;
    let parentContext = api.ROOT_CONTEXT;
    const links: Otel.Link[] = [];
    // Each link made as it is kept, no list of contexts first: a batch links to up to MAX_LINKS of them.
    for (const carrier of carriers ?? []) {
      const context = this.contextOf(carrier, true);
      if (!context) continue;
      if (parent) {
        parentContext = api.trace.setSpanContext(api.ROOT_CONTEXT, context);
        break;
      }
      links.push({ context });
      if (links.length === MAX_LINKS) break;
    }
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
        links,
      },
      parentContext,
    );
    return new ProcessSpan(span, api.trace.setSpan(parentContext, span), api);
  }

  private carrierOf(context: Otel.SpanContext): string | undefined {
    if (!this.api.isSpanContextValid(context)) return undefined;
    // Of the flags, "sampled" alone is read back (see contextOf): written as such, no number formatted per push.
    const parent = '00-' + context.traceId + '-' + context.spanId + ((context.traceFlags & 1) === 1 ? '-01' : '-00');
    const state = context.traceState?.serialize();
    // The carrier ends at a quote, and is stored inside one (see traced-json.ts).
    return state && !/["\\]/.test(state) ? parent + state : parent;
  }

  /**
   * Undefined for a carrier that is not a traceparent this library wrote. Only its shape is checked
   * (a link per message: the ids' own checks cost more than the rest of the link); of the flags, only
   * "sampled" is kept. `remote`: read back from Redis, rather than made in this process.
   */
  private contextOf(carrier: string, remote: boolean): Otel.SpanContext | undefined {
    if (carrier.length < 55 || carrier.charCodeAt(35) !== 45 || carrier.charCodeAt(52) !== 45) return undefined;
    const context: Otel.SpanContext = {
      traceId: carrier.slice(3, 35),
      spanId: carrier.slice(36, 52),
      traceFlags: carrier.charCodeAt(54) & 1,
      isRemote: remote,
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

function failed(span: Otel.Span, error: unknown, api: typeof Otel): void {
  span.setAttribute('error.type', error instanceof Error ? error.name || error.constructor.name : typeof error);
  if (error instanceof Error) span.recordException(error);
  span.setStatus({ code: api.SpanStatusCode.ERROR, message: error instanceof Error ? error.message : String(error) });
}
