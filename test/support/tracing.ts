import { context, propagation, type Span, trace } from '@opentelemetry/api';
import { AsyncLocalStorageContextManager } from '@opentelemetry/context-async-hooks';
import { W3CTraceContextPropagator } from '@opentelemetry/core';
import {
  BasicTracerProvider,
  InMemorySpanExporter,
  type ReadableSpan,
  SimpleSpanProcessor,
} from '@opentelemetry/sdk-trace-base';
import { afterAll, beforeAll } from 'vitest';

/**
 * Registers OpenTelemetry's SDK for a test file, as an application (or the ADOT layer) registers
 * it — async context, W3C propagation — with an in-memory exporter; unregistered after the file.
 * The returned exporter holds every span ended so far.
 */
export function recordingSpans(): InMemorySpanExporter {
  const exporter = new InMemorySpanExporter();
  beforeAll(() => {
    context.setGlobalContextManager(new AsyncLocalStorageContextManager().enable());
    propagation.setGlobalPropagator(new W3CTraceContextPropagator());
    trace.setGlobalTracerProvider(
      new BasicTracerProvider({ spanProcessors: [new SimpleSpanProcessor(exporter)] }),
    );
  });
  afterAll(() => {
    trace.disable();
    propagation.disable();
    context.disable();
  });
  return exporter;
}

/** Runs `work` in a new active span of the test's own, as a producer's request handler would. */
export async function inProducerSpan<T>(work: () => Promise<T>): Promise<{ result: T; traceparent: string }> {
  return trace.getTracer('oncely-test').startActiveSpan('place order', async (span: Span) => {
    try {
      const { traceId, spanId } = span.spanContext();
      return { result: await work(), traceparent: `00-${traceId}-${spanId}-01` };
    } finally {
      span.end();
    }
  });
}

/** The W3C traceparent of a finished span. */
export function traceparentOf(span: ReadableSpan): string {
  const { traceId, spanId } = span.spanContext();
  return `00-${traceId}-${spanId}-01`;
}

/** The traceparents a finished span links to. */
export function linksOf(span: ReadableSpan): string[] {
  return span.links.map(
    ({ context: { traceId, spanId, traceFlags } }) =>
      `00-${traceId}-${spanId}-${traceFlags.toString(16).padStart(2, '0')}`,
  );
}
