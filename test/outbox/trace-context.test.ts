import type { DynamoDBClient } from '@aws-sdk/client-dynamodb';
import type { SQSClient } from '@aws-sdk/client-sqs';
import { SpanKind, trace } from '@opentelemetry/api';
import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, it, vi } from 'vitest';
import { OncelyConfigurationError } from '../../lambdas/common/configuration-error.js';
import { Outbox, type OutboxMessage } from '../../lambdas/outbox/index.js';
import type { OutboxLayout } from '../../lambdas/outbox/layout.js';
import { relayBatch } from '../../lambdas/outbox/relay.js';
import { sweep } from '../../lambdas/outbox/sweeper.js';
import { type MessageSender, tracedSendBatch } from '../../lambdas/publisher/send-span.js';
import { localDynamoClient } from '../support/dynamodb.js';
import { createOutboxTable, markerInserts, outboxItemOf, senderOptions } from '../support/outbox.js';
import { createFifoQueue, deleteQueues, drainQueue, type FifoQueue, localSqsClient } from '../support/sqs.js';
import { linksOf, recordingSpans } from '../support/tracing.js';

// DESIGN §6 and §9: the trace context of the code that writes to the outbox is kept on each outbox
// item and sent with the message by whichever of the relay and the sweeper sends it, in a send span
// linked to the writer's.

const X_RAY = 'Root=1-5759e988-bd862e3fe1be46a994272793;Parent=53995c3f42cd8ad8;Sampled=1';
const forever = () => 60_000;
const spans = recordingSpans();

let dynamodb: DynamoDBClient;
let sqs: SQSClient;
let layout: OutboxLayout;
let queue: FifoQueue;
const queues: FifoQueue[] = [];

beforeAll(() => {
  dynamodb = localDynamoClient();
  sqs = localSqsClient(1);
});
beforeEach(async () => {
  layout = await createOutboxTable(dynamodb);
  queue = await createFifoQueue(sqs);
  queues.push(queue);
});
afterEach(() => {
  vi.unstubAllEnvs();
});
afterAll(async () => {
  await deleteQueues(sqs, queues);
  sqs.destroy();
  dynamodb.destroy();
});

const message = (key: string): OutboxMessage => ({
  type: 'OrderPlaced',
  groupId: 'customer-7',
  key,
  payload: {},
});

/** The sender's options, its sends traced as the relay's and the sweeper's functions trace them. */
function tracedSender(sender: MessageSender) {
  const options = senderOptions(dynamodb, sqs, layout, queue.url);
  return { ...options, sendBatch: tracedSendBatch(options.sendBatch, queue.url, sender) };
}

/** The send span of `key`'s message. */
const sendSpanOf = (key: string) =>
  spans
    .getFinishedSpans()
    .find(
      (span) =>
        span.kind === SpanKind.PRODUCER && (span.attributes['oncely.message.keys'] as string[]).includes(key),
    );

/** Writes `key` inside a new active span; resolves with the span's W3C traceparent. */
function writeInSpan(outbox: Outbox, key: string): Promise<string> {
  return trace.getTracer('oncely-test').startActiveSpan('place order', async (span) => {
    try {
      await outbox.write({ messages: [message(key)] });
      const { traceId, spanId } = span.spanContext();
      return `00-${traceId}-${spanId}-01`;
    } finally {
      span.end();
    }
  });
}

describe('the outbox carries the trace context', () => {
  it('keeps the writer’s context on the item, and the relay sends it', async () => {
    vi.stubEnv('_X_AMZN_TRACE_ID', X_RAY);
    const outbox = new Outbox({ client: dynamodb, ...layout });
    const traceparent = await writeInSpan(outbox, 'relayed');
    expect((await outboxItemOf(dynamodb, layout, 'relayed')).traceContext).toEqual({
      traceparent,
      awsTraceHeader: X_RAY,
    });
    await relayBatch(await markerInserts(dynamodb, layout, ['customer-7']), {
      ...tracedSender('relay'),
      timeLeftMs: forever,
    });
    const [received] = await drainQueue(sqs, queue.url, 1);
    expect(received?.attributes).toEqual({ traceparent });
    expect(received?.awsTraceHeader).toBe(X_RAY);
    const send = sendSpanOf('relayed');
    expect(send?.attributes).toMatchObject({
      'oncely.sender': 'relay',
      'oncely.message.group': 'customer-7',
    });
    // The W3C context and the X-Ray header name two spans: a link to each.
    expect(linksOf(send as never)).toEqual([
      traceparent,
      '00-5759e988bd862e3fe1be46a994272793-53995c3f42cd8ad8-01',
    ]);
  });

  it('the sweeper sends what the relay missed with the same context', async () => {
    const outbox = new Outbox({ client: dynamodb, ...layout });
    const traceparent = await writeInSpan(outbox, 'swept');
    await sweep({
      ...tracedSender('sweeper'),
      sweepAfterMs: 0,
      stuckAfterMs: 60_000,
      timeLeftMs: forever,
    });
    const [received] = await drainQueue(sqs, queue.url, 1);
    expect(received?.attributes).toEqual({ traceparent });
    const send = sendSpanOf('swept');
    expect(send?.attributes['oncely.sender']).toBe('sweeper');
    expect(linksOf(send as never)).toEqual([traceparent]);
  });

  it('keeps none outside a span or with traceContext: false, and refuses a misspelt field', async () => {
    const outbox = new Outbox({ client: dynamodb, ...layout });
    await outbox.write({ messages: [message('outside')] });
    await trace.getTracer('oncely-test').startActiveSpan('quiet', async (span) => {
      await outbox.write({ messages: [message('off')], traceContext: false });
      span.end();
    });
    for (const key of ['outside', 'off']) {
      expect((await outboxItemOf(dynamodb, layout, key)).traceContext).toBeUndefined();
    }
    await expect(
      outbox.write({ messages: [message('typo')], traceContext: { traceParent: 'x' } as never }),
    ).rejects.toThrow(OncelyConfigurationError);
  });
});
