// What the ADOT layer gives a function on AWS, for a sandbox container (docs/local.md, "Traces"):
// OpenTelemetry's SDK registered before the handler loads — async context, W3C propagation — a span
// per invocation as Lambda's instrumentation starts it, and the spans exported as OTLP/HTTP JSON to
// the sandbox's collector, flushed before each invocation answers (as the layer flushes before
// Lambda freezes the environment). The function's code is unchanged: its bundled
// `@opentelemetry/api` finds this SDK through the API's global registration. Plain JavaScript, as
// function-worker.mjs, which imports it only when the sandbox collects traces.
import { context, propagation, ROOT_CONTEXT, SpanKind, SpanStatusCode, trace } from '@opentelemetry/api';
import { AsyncLocalStorageContextManager } from '@opentelemetry/context-async-hooks';
import { W3CTraceContextPropagator } from '@opentelemetry/core';
import { BasicTracerProvider, BatchSpanProcessor } from '@opentelemetry/sdk-trace-base';

/** The instrumentation scope of the invocation spans, as the Lambda instrumentation's is on AWS. */
const LAMBDA_SCOPE = 'oncely-local-lambda';

/**
 * Registers the SDK, exporting to `endpoint` (the collector's `/v1/traces`), and answers how to run
 * an invocation inside its span.
 */
export function startTracing(endpoint) {
  const resource = {
    'service.name': process.env.AWS_LAMBDA_FUNCTION_NAME,
    'faas.name': process.env.AWS_LAMBDA_FUNCTION_NAME,
    'cloud.provider': 'aws',
    'cloud.region': process.env.AWS_REGION,
  };
  const provider = new BasicTracerProvider({
    // Exported when the invocation ends, not on a timer: a frozen container runs no timer.
    spanProcessors: [
      new BatchSpanProcessor(otlpJsonExporter(endpoint, resource), { scheduledDelayMillis: 60_000 }),
    ],
  });
  context.setGlobalContextManager(new AsyncLocalStorageContextManager().enable());
  propagation.setGlobalPropagator(new W3CTraceContextPropagator());
  trace.setGlobalTracerProvider(provider);
  const tracer = provider.getTracer(LAMBDA_SCOPE);
  let coldStart = true;
  return {
    /** Runs `invoke` inside the invocation's span; resolves with its reply once the spans are exported. */
    async around(event, lambdaContext, invoke) {
      const span = tracer.startSpan(
        lambdaContext.functionName,
        {
          kind: SpanKind.SERVER,
          attributes: {
            'faas.invocation_id': lambdaContext.awsRequestId,
            'faas.coldstart': coldStart,
            'faas.trigger': triggerOf(event),
            'cloud.resource_id': lambdaContext.invokedFunctionArn,
          },
        },
        ROOT_CONTEXT,
      );
      coldStart = false;
      const reply = await context.with(trace.setSpan(ROOT_CONTEXT, span), invoke);
      if (reply.error) span.setStatus({ code: SpanStatusCode.ERROR, message: reply.error.errorMessage });
      span.end();
      await provider.forceFlush().catch(() => undefined); // tracing never fails an invocation
      return reply;
    },
  };
}

/** OpenTelemetry's `faas.trigger` for the event a function got. */
function triggerOf(event) {
  const source = event?.Records?.[0]?.eventSource;
  if (source === 'aws:sqs') return 'pubsub';
  if (source === 'aws:dynamodb') return 'datasource';
  if (event?.source === 'aws.events') return 'timer';
  return 'other';
}

/** A span exporter that POSTs OTLP/HTTP JSON (opentelemetry-proto's JSON mapping) to `endpoint`. */
function otlpJsonExporter(endpoint, resource) {
  return {
    export(spans, done) {
      const body = JSON.stringify(exportRequest(spans, resource));
      fetch(endpoint, { method: 'POST', headers: { 'content-type': 'application/json' }, body })
        .then((response) => done({ code: response.ok ? 0 : 1 }))
        .catch((error) => done({ code: 1, error }));
    },
    shutdown: async () => undefined,
  };
}

/** An ExportTraceServiceRequest: the spans grouped by their instrumentation scope. */
function exportRequest(spans, resource) {
  const scopes = new Map();
  for (const span of spans) {
    const { name, version } = span.instrumentationScope;
    const key = `${name}@${version ?? ''}`;
    if (!scopes.has(key)) scopes.set(key, { scope: { name, ...(version ? { version } : {}) }, spans: [] });
    scopes.get(key).spans.push(encodeSpan(span));
  }
  return {
    resourceSpans: [{ resource: { attributes: keyValues(resource) }, scopeSpans: [...scopes.values()] }],
  };
}

function encodeSpan(span) {
  const { traceId, spanId, traceState } = span.spanContext();
  return {
    traceId,
    spanId,
    ...(traceState ? { traceState: traceState.serialize() } : {}),
    ...(span.parentSpanContext ? { parentSpanId: span.parentSpanContext.spanId } : {}),
    name: span.name,
    // The API's kinds start at INTERNAL = 0, the protocol's at SPAN_KIND_INTERNAL = 1.
    kind: span.kind + 1,
    startTimeUnixNano: nanos(span.startTime),
    endTimeUnixNano: nanos(span.endTime),
    attributes: keyValues(span.attributes),
    events: span.events.map((event) => ({
      timeUnixNano: nanos(event.time),
      name: event.name,
      attributes: keyValues(event.attributes),
    })),
    links: span.links.map((link) => ({
      traceId: link.context.traceId,
      spanId: link.context.spanId,
      ...(link.context.traceState ? { traceState: link.context.traceState.serialize() } : {}),
      attributes: keyValues(link.attributes),
    })),
    status: { code: span.status.code, ...(span.status.message ? { message: span.status.message } : {}) },
  };
}

/** An HrTime, `[seconds, nanoseconds]`, as the protocol's decimal string of nanoseconds. */
function nanos([seconds, nanoseconds]) {
  return (BigInt(seconds) * 1_000_000_000n + BigInt(nanoseconds)).toString();
}

function keyValues(attributes = {}) {
  return Object.entries(attributes)
    .filter(([, value]) => value !== undefined)
    .map(([key, value]) => ({ key, value: anyValue(value) }));
}

function anyValue(value) {
  if (Array.isArray(value)) return { arrayValue: { values: value.map(anyValue) } };
  if (typeof value === 'boolean') return { boolValue: value };
  if (typeof value === 'number')
    return Number.isInteger(value) ? { intValue: String(value) } : { doubleValue: value };
  return { stringValue: String(value) };
}
