import type { Attributes, Link, Span } from '@opentelemetry/api';
import { loadOpenTelemetry, type OpenTelemetryApi } from './open-telemetry.js';
import type { TraceContext } from './trace-context.js';

/** The instrumentation scope of Oncely's spans: the tracer's name. */
export const TRACER_NAME = 'oncely';

/** A span's attributes; an `undefined` one is left out. */
export type SpanAttributes = Record<string, string | number | boolean | string[] | undefined>;

/** The fields that tie a log line to the span of its work (OpenTelemetry's log correlation). */
export interface TraceLogFields {
  trace_id: string;
  span_id: string;
}

/**
 * One of Oncely's spans (DESIGN §6). Without `@opentelemetry/api`, or without an SDK registered,
 * it records nothing and costs next to nothing.
 */
export interface OncelySpan {
  /** For the log lines of its work; none for a span without a valid context (no SDK). */
  readonly logFields: TraceLogFields | undefined;
  setAttributes(attributes: SpanAttributes): void;
  /** Marks it failed, with `error` as its exception event. */
  fail(error: unknown): void;
  /** Ends it; later calls do nothing. */
  end(): void;
  /** Runs `work` with this span active: the spans its calls start nest under it. */
  within<T>(work: () => T): T;
}

/** The span of a process without `@opentelemetry/api`: nothing recorded, `work` run as it is. */
export const NO_SPAN: OncelySpan = {
  logFields: undefined,
  setAttributes() {},
  fail() {},
  end() {},
  within(work) {
    return work();
  },
};

export interface SpanOptions {
  /** OpenTelemetry's span kind: `consumer` for a record's processing, `producer` for a send. */
  kind: 'consumer' | 'producer';
  attributes: SpanAttributes;
  /** The producers' contexts the span links to (not its parent: that is the active context). */
  links: readonly (TraceContext | undefined)[];
}

/** Starts Oncely's spans with the registered tracer provider (the ADOT layer's, or the user's SDK). */
export interface Tracing {
  /**
   * Whether an SDK is registered: without one, the API's spans record nothing, so none is started
   * and no attribute built. Asked at each span, since an SDK may register after Oncely loads.
   */
  enabled(): boolean;
  start(name: string, options: SpanOptions): OncelySpan;
}

let tracing: Promise<Tracing | undefined> | undefined;

/** The process's tracing: none when `@opentelemetry/api` is not installed. Loaded once. */
export function loadTracing(): Promise<Tracing | undefined> {
  tracing ??= loadOpenTelemetry().then((api) => api && openTelemetryTracing(api));
  return tracing;
}

/** The API's own provider: a proxy that hands out an SDK's tracers once one is registered. */
interface ProxyTracerProvider {
  getDelegateTracer?(name: string): unknown;
}

function openTelemetryTracing(api: OpenTelemetryApi): Tracing {
  const tracer = api.trace.getTracer(TRACER_NAME);
  const kinds = { consumer: api.SpanKind.CONSUMER, producer: api.SpanKind.PRODUCER } as const;
  // Once an SDK is registered, it stays: only its absence is asked again.
  let registered = false;
  return {
    enabled() {
      if (registered) return true;
      const provider = api.trace.getTracerProvider() as ProxyTracerProvider;
      registered =
        typeof provider.getDelegateTracer !== 'function' ||
        provider.getDelegateTracer(TRACER_NAME) !== undefined;
      return registered;
    },
    start(name, { kind, attributes, links }) {
      const span = tracer.startSpan(name, {
        kind: kinds[kind],
        attributes: definedAttributes(attributes),
        links: spanLinks(api, links),
      });
      return openTelemetrySpan(api, span);
    },
  };
}

function openTelemetrySpan(api: OpenTelemetryApi, span: Span): OncelySpan {
  const spanContext = span.spanContext();
  let ended = false;
  return {
    logFields: api.trace.isSpanContextValid(spanContext)
      ? { trace_id: spanContext.traceId, span_id: spanContext.spanId }
      : undefined,
    setAttributes(attributes) {
      span.setAttributes(definedAttributes(attributes));
    },
    fail(error) {
      span.recordException(error instanceof Error ? error : String(error));
      span.setStatus({
        code: api.SpanStatusCode.ERROR,
        message: error instanceof Error ? error.message : String(error),
      });
    },
    end() {
      if (ended) return;
      ended = true;
      span.end();
    },
    within(work) {
      return api.context.with(api.trace.setSpan(api.context.active(), span), work);
    },
  };
}

function definedAttributes(attributes: SpanAttributes): Attributes {
  const defined: Attributes = {};
  for (const [name, value] of Object.entries(attributes)) if (value !== undefined) defined[name] = value;
  return defined;
}

/** A link to each span the contexts name, once each: the messages of one request share one. */
function spanLinks(api: OpenTelemetryApi, traces: readonly (TraceContext | undefined)[]): Link[] {
  const linked = new Map<string, LinkedSpanContext>();
  for (const context of traces.flatMap(linkedSpanContexts)) {
    linked.set(`${context.traceId}-${context.spanId}`, context);
  }
  return [...linked.values()].map(({ traceState, ...context }) => ({
    context: {
      ...context,
      isRemote: true,
      ...(traceState ? { traceState: api.createTraceState(traceState) } : {}),
    },
  }));
}

/** A producer's span, as a carried context names it. */
export interface LinkedSpanContext {
  traceId: string;
  spanId: string;
  /** W3C's trace flags: 1 when the producer sampled it. */
  traceFlags: number;
  traceState?: string;
}

const X_RAY_ROOT = /^1-([0-9a-f]{8})-([0-9a-f]{24})$/;
const X_RAY_PARENT = /^[0-9a-f]{16}$/;

/** An X-Ray header's span (its `Root`, `Parent` and `Sampled` fields, in any order), if it names one. */
function xRaySpanContext(header: string): LinkedSpanContext | undefined {
  const fields = new Map(
    header.split(';').map((field) => {
      const [name = '', value = ''] = field.split('=', 2);
      return [name.trim(), value.trim()];
    }),
  );
  const root = X_RAY_ROOT.exec(fields.get('Root') ?? '');
  const parent = fields.get('Parent') ?? '';
  if (!root || !X_RAY_PARENT.test(parent)) return undefined;
  return {
    traceId: `${root[1]}${root[2]}`,
    spanId: parent,
    traceFlags: fields.get('Sampled') === '1' ? 1 : 0,
  };
}

/**
 * The spans a carried context names (DESIGN §6): its `traceparent`'s, and its X-Ray header's when
 * that names another span (one with a `Parent`; X-Ray's trace id is the W3C one with its dash taken
 * out). A context was checked where it was carried (`sanitizedTraceContext`).
 */
export function linkedSpanContexts(trace: TraceContext | undefined): LinkedSpanContext[] {
  const contexts: LinkedSpanContext[] = [];
  if (trace?.traceparent) {
    const [, traceId, spanId, flags] = trace.traceparent.split('-') as [string, string, string, string];
    contexts.push({
      traceId,
      spanId,
      traceFlags: Number.parseInt(flags, 16),
      ...(trace.tracestate ? { traceState: trace.tracestate } : {}),
    });
  }
  const xRay = trace?.awsTraceHeader ? xRaySpanContext(trace.awsTraceHeader) : undefined;
  if (xRay && !contexts.some(({ traceId, spanId }) => traceId === xRay.traceId && spanId === xRay.spanId)) {
    contexts.push(xRay);
  }
  return contexts;
}

/** A queue's name, from its URL or ARN: `messaging.destination.name`. */
export function queueNameOf(urlOrArn: string): string {
  return urlOrArn.slice(Math.max(urlOrArn.lastIndexOf('/'), urlOrArn.lastIndexOf(':')) + 1);
}
