import { context, trace } from '@opentelemetry/api';
import { AsyncLocalStorageContextManager } from '@opentelemetry/context-async-hooks';
import {
  BasicTracerProvider,
  InMemorySpanExporter,
  SimpleSpanProcessor,
} from '@opentelemetry/sdk-trace-base';
import { afterAll, describe, expect, it } from 'vitest';
import { linkedSpanContexts, loadTracing, queueNameOf } from '../../lambdas/common/tracing.js';

// DESIGN §6: the spans Oncely starts link to the producers a message's context names, and cost
// nothing without an SDK.

const TRACEPARENT = '00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01';

describe('the spans a carried context names', () => {
  it('reads a traceparent, with its tracestate and flags', () => {
    expect(linkedSpanContexts({ traceparent: TRACEPARENT, tracestate: 'rojo=1' })).toEqual([
      {
        traceId: '4bf92f3577b34da6a3ce929d0e0e4736',
        spanId: '00f067aa0ba902b7',
        traceFlags: 1,
        traceState: 'rojo=1',
      },
    ]);
    expect(linkedSpanContexts({ traceparent: TRACEPARENT.replace(/01$/, '00') })[0]?.traceFlags).toBe(0);
  });

  it("reads an X-Ray header's Root and Parent, in any order, as a W3C trace and span id", () => {
    const expected = {
      traceId: '5759e988bd862e3fe1be46a994272793',
      spanId: '53995c3f42cd8ad8',
      traceFlags: 1,
    };
    expect(
      linkedSpanContexts({
        awsTraceHeader: 'Root=1-5759e988-bd862e3fe1be46a994272793;Parent=53995c3f42cd8ad8;Sampled=1',
      }),
    ).toEqual([expected]);
    expect(
      linkedSpanContexts({
        awsTraceHeader: 'Sampled=1; Parent=53995c3f42cd8ad8; Root=1-5759e988-bd862e3fe1be46a994272793',
      }),
    ).toEqual([expected]);
    expect(
      linkedSpanContexts({
        awsTraceHeader: 'Root=1-5759e988-bd862e3fe1be46a994272793;Parent=53995c3f42cd8ad8',
      })[0]?.traceFlags,
    ).toBe(0);
  });

  it('names no span for an X-Ray header without a Parent, and one span once when both name it', () => {
    expect(
      linkedSpanContexts({ awsTraceHeader: 'Root=1-5759e988-bd862e3fe1be46a994272793;Sampled=1' }),
    ).toEqual([]);
    const both = {
      traceparent: TRACEPARENT,
      awsTraceHeader: 'Root=1-4bf92f35-77b34da6a3ce929d0e0e4736;Parent=00f067aa0ba902b7;Sampled=1',
    };
    expect(linkedSpanContexts(both)).toHaveLength(1);
    expect(linkedSpanContexts(undefined)).toEqual([]);
  });

  it("takes a queue's name from its URL or its ARN", () => {
    expect(queueNameOf('http://localhost:9324/000000000000/orders.fifo')).toBe('orders.fifo');
    expect(queueNameOf('arn:aws:sqs:eu-west-1:123456789012:orders.fifo')).toBe('orders.fifo');
  });
});

describe("Oncely's spans", () => {
  afterAll(() => {
    trace.disable();
    context.disable();
  });

  it('without an SDK registered, are not started; one started anyway records nothing and gives log lines no ids', async () => {
    const tracing = await loadTracing();
    expect(tracing?.enabled()).toBe(false);
    const span = tracing?.start('process q', {
      kind: 'consumer',
      attributes: {},
      links: [{ traceparent: TRACEPARENT }],
    });
    expect(span?.logFields).toBeUndefined();
    expect(span?.within(() => 'ran')).toBe('ran');
    span?.end();
  });

  it('with an SDK, link each named span once and make their work nest under them', async () => {
    const exporter = new InMemorySpanExporter();
    context.setGlobalContextManager(new AsyncLocalStorageContextManager().enable());
    trace.setGlobalTracerProvider(
      new BasicTracerProvider({ spanProcessors: [new SimpleSpanProcessor(exporter)] }),
    );
    const tracing = await loadTracing();
    // Registered after Oncely loaded the API, as a user's SDK may be.
    expect(tracing?.enabled()).toBe(true);
    const span = tracing?.start('send q', {
      kind: 'producer',
      attributes: { 'oncely.sender': 'relay', left: undefined },
      // Ten messages of one request share their producer's context: one link.
      links: [{ traceparent: TRACEPARENT }, { traceparent: TRACEPARENT }, undefined],
    });
    await span?.within(async () => {
      await Promise.resolve();
      trace.getTracer('user').startSpan('inner').end();
    });
    span?.fail(new Error('refused'));
    span?.end();
    span?.end();
    const [inner, sent] = exporter.getFinishedSpans();
    expect(sent?.links).toHaveLength(1);
    expect(sent?.attributes).toEqual({ 'oncely.sender': 'relay' });
    expect(sent?.status.message).toBe('refused');
    expect(inner?.parentSpanContext?.spanId).toBe(sent?.spanContext().spanId);
    expect(span?.logFields).toEqual({
      trace_id: sent?.spanContext().traceId,
      span_id: sent?.spanContext().spanId,
    });
    expect(exporter.getFinishedSpans()).toHaveLength(2);
  });
});
