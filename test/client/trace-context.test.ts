import type { LambdaClient } from '@aws-sdk/client-lambda';
import { SpanKind, SpanStatusCode } from '@opentelemetry/api';
// The package's own name: what other services import.
import { OncelyConfigurationError, publish } from 'oncely/client';
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { orders, usePublisherFixture } from '../support/publisher.js';
import {
  PUBLISHER_FUNCTION,
  type ServedFunction,
  servePublisherFunction,
} from '../support/publisher-function.js';
import { drainQueue } from '../support/sqs.js';
import { injectCallFaults } from '../support/sqs-faults.js';
import { inProducerSpan as inSpan, linksOf, recordingSpans } from '../support/tracing.js';

// DESIGN §6: the producer's trace context rides with each message it publishes, as the SQS
// attributes OpenTelemetry and X-Ray read, through the real client, publisher and SQS emulator,
// with OpenTelemetry's own SDK registered as an application registers it.

const FUNCTION = PUBLISHER_FUNCTION;
const FAST = { maxAttempts: 20, baseDelayMs: 2, maxDelayMs: 10 };
const X_RAY = 'Root=1-5759e988-bd862e3fe1be46a994272793;Parent=53995c3f42cd8ad8;Sampled=1';

const fixture = usePublisherFixture();
let lambda: LambdaClient;
let served: ServedFunction;
/** The trace context of each request the publisher function received, in order. */
let requestContexts: unknown[];

const spans = recordingSpans();

beforeEach(async () => {
  requestContexts = [];
  const publisher = fixture.publisher();
  served = await servePublisherFunction((event, invocation) => {
    requestContexts.push((event as { traceContext?: unknown }).traceContext);
    return publisher(event, invocation);
  });
  lambda = served.lambda;
});

afterEach(async () => {
  await served.stop();
  vi.unstubAllEnvs();
});

const options = () => ({ functionName: FUNCTION, lambda, retry: FAST });
const connectionReset = () => Object.assign(new Error('socket hang up'), { code: 'ECONNRESET' });

/** The publisher's send spans, in the order they ended. */
const sendSpans = () => spans.getFinishedSpans().filter(({ kind }) => kind === SpanKind.PRODUCER);

describe('publish carries the trace context (DESIGN §6)', () => {
  it("sends the active span's context with every message, as the traceparent attribute", async () => {
    const messages = orders(6, 2);
    const { result, traceparent } = await inSpan(() => publish(messages, options()));
    expect(result.results.map(({ status }) => status)).toEqual(messages.map(() => 'sent'));
    const received = await drainQueue(fixture.sqs, fixture.queueUrl, messages.length);
    expect(received.map(({ attributes }) => attributes.traceparent)).toEqual(messages.map(() => traceparent));
    expect(received.every(({ awsTraceHeader }) => awsTraceHeader === undefined)).toBe(true);
  });

  it("sends the Lambda invocation's X-Ray header as the AWSTraceHeader system attribute", async () => {
    vi.stubEnv('_X_AMZN_TRACE_ID', X_RAY);
    await publish(orders(2, 1), options());
    const received = await drainQueue(fixture.sqs, fixture.queueUrl, 2);
    expect(received.map(({ awsTraceHeader }) => awsTraceHeader)).toEqual([X_RAY, X_RAY]);
    // No span was active: no W3C context.
    expect(received.map(({ attributes }) => attributes)).toEqual([{}, {}]);
  });

  it('sends nothing outside a span, nor with traceContext: false inside one', async () => {
    await publish(orders(1, 1, 'outside'), options());
    await inSpan(() => publish(orders(1, 1, 'off'), { ...options(), traceContext: false }));
    const received = await drainQueue(fixture.sqs, fixture.queueUrl, 2);
    expect(received.map(({ attributes }) => attributes)).toEqual([{}, {}]);
    expect(requestContexts).toEqual([undefined, undefined]);
  });

  it("sends a caller's own context, tracestate included, and refuses a misspelt field", async () => {
    const traceparent = '00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01';
    const tracestate = 'rojo=00f067aa0ba902b7';
    await publish(orders(1, 1), { ...options(), traceContext: { traceparent, tracestate } });
    const [received] = await drainQueue(fixture.sqs, fixture.queueUrl, 1);
    expect(received?.attributes).toEqual({ traceparent, tracestate });
    await expect(
      publish(orders(1, 1), { ...options(), traceContext: { traceParent: traceparent } as never }),
    ).rejects.toThrow(OncelyConfigurationError);
  });

  it('a message whose send was applied and its answer lost is on the queue once, with the context', async () => {
    let calls = 0;
    injectCallFaults(fixture.sqs, () =>
      ++calls === 1 ? { when: 'after-sending', error: connectionReset() } : undefined,
    );
    const { traceparent } = await inSpan(() => publish(orders(3, 3), options()));
    const received = await drainQueue(fixture.sqs, fixture.queueUrl, 3); // and not one more
    expect(received.map(({ attributes }) => attributes.traceparent)).toEqual([
      traceparent,
      traceparent,
      traceparent,
    ]);
  });

  it("re-send rounds carry the first request's context", async () => {
    // Every answer of the first request's sends is lost: its message ends unknown, and a round re-sends it.
    injectCallFaults(fixture.sqs, () =>
      requestContexts.length === 1 ? { when: 'after-sending', error: connectionReset() } : undefined,
    );
    const { traceparent, result } = await inSpan(() => publish(orders(2, 1), options()));
    expect(result.results.map(({ status }) => status)).toEqual(['sent', 'sent']);
    expect(requestContexts).toEqual([{ traceparent }, { traceparent }]);
    await drainQueue(fixture.sqs, fixture.queueUrl, 2);
  });

  it('a repeat under one requestId from another trace replays the first response', async () => {
    const messages = orders(2, 1);
    const requestId = 'order-7-placed';
    const first = await inSpan(() => publish(messages, { ...options(), requestId }));
    const again = await inSpan(() => publish(messages, { ...options(), requestId }));
    expect(again.traceparent).not.toBe(first.traceparent);
    expect(again.result.results).toEqual(first.result.results);
    const received = await drainQueue(fixture.sqs, fixture.queueUrl, messages.length);
    expect(received.map(({ attributes }) => attributes.traceparent)).toEqual([
      first.traceparent,
      first.traceparent,
    ]);
  });
});

describe("the publisher's send spans (DESIGN §6)", () => {
  it('one per SendMessageBatch, linked to the producer, naming the keys sent', async () => {
    spans.reset();
    // Three groups, one call: a call carries at most one message of a group.
    const messages = orders(3, 3);
    const { traceparent } = await inSpan(() => publish(messages, options()));
    await drainQueue(fixture.sqs, fixture.queueUrl, messages.length);
    const [send, ...more] = sendSpans();
    expect(more).toEqual([]);
    expect(send?.name).toBe(`send ${fixture.queueUrl.split('/').pop()}`);
    // Three messages of one request: one producer, one link.
    expect(linksOf(send as never)).toEqual([traceparent]);
    expect(send?.attributes).toMatchObject({
      'messaging.system': 'aws_sqs',
      'messaging.operation.type': 'send',
      'messaging.batch.message_count': 3,
      'oncely.sender': 'publisher',
      'oncely.sent_count': 3,
    });
    expect(send?.attributes['oncely.message.keys']).toEqual(expect.arrayContaining(['order-0', 'order-2']));
    expect(send?.status.code).toBe(SpanStatusCode.UNSET);
  });

  it('a send applied but its answer lost fails its span; the re-send has its own, linked alike', async () => {
    spans.reset();
    let calls = 0;
    injectCallFaults(fixture.sqs, () =>
      ++calls === 1 ? { when: 'after-sending', error: connectionReset() } : undefined,
    );
    const { traceparent } = await inSpan(() => publish(orders(2, 2), options()));
    await drainQueue(fixture.sqs, fixture.queueUrl, 2);
    const [lost, resent] = sendSpans();
    expect(lost?.status).toMatchObject({ code: SpanStatusCode.ERROR });
    expect(lost?.attributes['oncely.sent_count']).toBe(0);
    expect(resent?.status.code).toBe(SpanStatusCode.UNSET);
    expect(resent?.attributes['oncely.sent_count']).toBe(2);
    expect([linksOf(lost as never), linksOf(resent as never)]).toEqual([[traceparent], [traceparent]]);
  });
});
