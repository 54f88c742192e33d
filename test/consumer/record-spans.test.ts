import { randomUUID } from 'node:crypto';
import { SendMessageCommand } from '@aws-sdk/client-sqs';
import { SpanKind, SpanStatusCode, trace } from '@opentelemetry/api';
import type { ReadableSpan } from '@opentelemetry/sdk-trace-base';
import type { SQSEvent } from 'aws-lambda';
import { describe, expect, it } from 'vitest';
import { createEnvelope } from '../../lambdas/common/envelope.js';
import { sqsTraceAttributes, type TraceContext } from '../../lambdas/common/trace-context.js';
import {
  type ConsumerLogger,
  type ConsumerOperation,
  leaseOperation,
  OutcomeUnknownError,
  processFifoBatch,
  processStandardBatch,
} from '../../lambdas/consumer/index.js';
import type { LeaseStore } from '../../lambdas/idempotency/lease-store.js';
import { LOCAL_REGION } from '../../sandbox/local-aws-config.js';
import { toSqsRecord } from '../../sandbox/sqs-event.js';
import { consumerTestWorld } from '../support/consumer-world.js';
import { lambdaContext } from '../support/lambda-context.js';
import { LEASE_STORES, type LeaseRecords, leaseRecords } from '../support/lease-stores.js';
import { createStandardQueueWithDlq, type FifoQueue, receiveMessages } from '../support/sqs.js';
import { STORE_STEPS, steppedStore } from '../support/store-steps.js';
import { metricsRecorder } from '../support/telemetry.js';
import { linksOf, recordingSpans, traceparentOf } from '../support/tracing.js';

// DESIGN §6: each record the consumer processes gets a span — `process <queue>`, a consumer span
// linked to its producer's context, saying its key, group, attempt and outcome — and the effect
// runs inside it. Through the SQS emulator and DynamoDB Local, with OpenTelemetry's SDK registered
// as the ADOT layer registers it.

const spans = recordingSpans();
const world = consumerTestWorld();

const PRODUCER: TraceContext = {
  traceparent: '00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01',
  tracestate: 'rojo=00f067aa0ba902b7',
};

interface Sent {
  type: string;
  groupId: string;
  key: string;
  trace?: TraceContext;
}

/** Sends each message as the publisher does, with its trace context's attributes. */
async function send(queue: FifoQueue, messages: readonly Sent[]): Promise<void> {
  const fifo = queue.url.endsWith('.fifo');
  for (const { type, groupId, key, trace } of messages) {
    await world.sqs.send(
      new SendMessageCommand({
        QueueUrl: queue.url,
        MessageBody: JSON.stringify(createEnvelope({ type, groupId, key, payload: {} })),
        MessageGroupId: groupId,
        ...(fifo ? { MessageDeduplicationId: key } : {}),
        MessageAttributes: sqsTraceAttributes(trace).MessageAttributes,
      }),
    );
  }
}

/** The batch Lambda would hand the consumer: the next `count` messages of the queue. */
async function batchOf(queue: FifoQueue, count: number): Promise<SQSEvent> {
  const received = await receiveMessages(world.sqs, queue.url, count);
  expect(received).toHaveLength(count);
  return { Records: received.map((message) => toSqsRecord(message, queue.arn, LOCAL_REGION)) };
}

/** Every log line the consumer wrote, with its fields. */
function capturingLogger(): ConsumerLogger & {
  lines: { message: string; fields: Record<string, unknown> }[];
} {
  const lines: { message: string; fields: Record<string, unknown> }[] = [];
  const write = (message: string, ...extra: Record<string, unknown>[]) => {
    lines.push({ message, fields: Object.assign({}, ...extra) });
  };
  return { lines, debug: write, info: write, warn: write, error: write };
}

const consumerOptions = (
  records: LeaseRecords,
  operations: Record<string, ConsumerOperation>,
  dlq: FifoQueue,
  extra: { logger?: ConsumerLogger; store?: LeaseStore } = {},
) => ({
  operations,
  store: extra.store ?? records.store(),
  deadLetterQueue: { client: world.sqs, queueUrl: dlq.url },
  logger: extra.logger ?? capturingLogger(),
  metrics: metricsRecorder(),
});

/** The record spans of the given keys, in the order they ended. */
function recordSpans(...keys: string[]): ReadableSpan[] {
  return spans
    .getFinishedSpans()
    .filter(
      (span) =>
        keys.includes(String(span.attributes['oncely.message.key'])) && span.kind === SpanKind.CONSUMER,
    );
}

/** The outcome the last line logged about `key` says: a stack's console lists messages by it. */
const loggedOutcome = (logger: ReturnType<typeof capturingLogger>, key: string) =>
  logger.lines.filter(({ fields }) => fields.messageKey === key).at(-1)?.fields.outcome;

const outcomes = (found: ReadableSpan[]) =>
  found.map((span) => [span.attributes['oncely.message.key'], span.attributes['oncely.outcome']]);

const key = (name: string) => `${name}-${randomUUID()}`;

/** Every step of the store that writes: all but `read`. */
const WRITES = STORE_STEPS.filter((step) => step !== 'read');

describe.each(LEASE_STORES)('a record span (DESIGN §6) (records in %s)', (storeName) => {
  const records = leaseRecords(storeName);

  it('links to its producer, names the record, and holds the effect; its redelivery says duplicate', async () => {
    const { queue, dlq } = await world.queuePair();
    const charge = key('charge');
    await send(queue, [{ type: 'Charge', groupId: 'order-42', key: charge, trace: PRODUCER }]);
    const event = await batchOf(queue, 1);
    const logger = capturingLogger();
    const operation = leaseOperation({
      namespace: 'spans',
      mode: 'at-most-once',
      run: async () => {
        // The effect's own call, as an instrumented HTTP client would trace it.
        // Named by the charge: the file's blocks (one per store) each make one.
        trace.getTracer('card-network').startSpan('POST /charges', { attributes: { charge } }).end();
      },
    });
    const options = consumerOptions(records, { Charge: operation }, dlq, { logger });
    expect((await processFifoBatch(event, lambdaContext(), options)).batchItemFailures).toEqual([]);

    const [span] = recordSpans(charge);
    expect(span?.name).toBe(`process ${queue.url.split('/').pop()}`);
    expect(span?.kind).toBe(SpanKind.CONSUMER);
    expect(linksOf(span as ReadableSpan)).toEqual([PRODUCER.traceparent]);
    expect(span?.links[0]?.context.traceState?.get('rojo')).toBe('00f067aa0ba902b7');
    expect(span?.attributes).toMatchObject({
      'messaging.system': 'aws_sqs',
      'messaging.operation.type': 'process',
      'messaging.destination.name': queue.url.split('/').pop(),
      'messaging.message.id': event.Records[0]?.messageId,
      'oncely.message.key': charge,
      'oncely.message.group': 'order-42',
      'oncely.message.type': 'Charge',
      'oncely.attempt': 1,
      'oncely.outcome': 'applied',
      'oncely.record.id': `spans#${charge}`,
    });
    // Linked, not parented: the producer's trace is not this one.
    expect(span?.spanContext().traceId).not.toBe(PRODUCER.traceparent?.split('-')[1]);
    const effect = spans
      .getFinishedSpans()
      .find(({ name, attributes }) => name === 'POST /charges' && attributes.charge === charge);
    expect(effect?.parentSpanContext?.spanId).toBe(span?.spanContext().spanId);
    expect(effect?.spanContext().traceId).toBe(span?.spanContext().traceId);
    const processed = logger.lines.find(({ message }) => message === 'processed');
    expect(processed?.fields).toMatchObject({
      messageKey: charge,
      trace_id: span?.spanContext().traceId,
      span_id: span?.spanContext().spanId,
    });

    // The same message again, as SQS redelivers it: a duplicate, linked to the same producer.
    await processFifoBatch(event, lambdaContext(), options);
    const [, again] = recordSpans(charge);
    expect(again?.attributes['oncely.outcome']).toBe('duplicate');
    // The line that told the verdict says it too, as the span does.
    expect(processed?.fields).toMatchObject({
      outcome: 'applied',
      recordId: span?.attributes['oncely.record.id'],
    });
    expect(loggedOutcome(logger, charge)).toBe('duplicate');
    expect(linksOf(again as ReadableSpan)).toEqual([PRODUCER.traceparent]);
    expect(again?.spanContext().spanId).not.toBe(span?.spanContext().spanId);
  });

  it('says given back for a failed record and the one skipped behind it, dead-lettered for a poison one', async () => {
    const { queue, dlq } = await world.queuePair();
    const [failing, behind, poison] = [key('failing'), key('behind'), key('poison')];
    await send(queue, [
      { type: 'Flaky', groupId: 'a', key: failing, trace: PRODUCER },
      { type: 'Flaky', groupId: 'a', key: behind },
      { type: 'Unknown', groupId: 'b', key: poison },
    ]);
    const event = await batchOf(queue, 3);
    const flaky = leaseOperation({
      namespace: 'spans',
      mode: 'at-least-once',
      run: () => {
        throw new Error('the mail server is down');
      },
    });
    const logger = capturingLogger();
    const response = await processFifoBatch(
      event,
      lambdaContext(),
      consumerOptions(records, { Flaky: flaky }, dlq, { logger }),
    );
    expect(response.batchItemFailures).toHaveLength(2);
    const found = recordSpans(failing, behind, poison);
    const expected = { [failing]: 'given-back', [behind]: 'given-back', [poison]: 'dead-lettered' };
    expect(Object.fromEntries(outcomes(found))).toEqual(expected);
    expect(Object.fromEntries([failing, behind, poison].map((k) => [k, loggedOutcome(logger, k)]))).toEqual(
      expected,
    );
    const byKey = (name: string) => found.find((span) => span.attributes['oncely.message.key'] === name);
    expect(byKey(failing)?.status).toMatchObject({
      code: SpanStatusCode.ERROR,
      message: 'the mail server is down',
    });
    expect(byKey(failing)?.events.map(({ name }) => name)).toEqual(['exception']);
    // Skipped, not failed: nothing of its own went wrong.
    expect(byKey(behind)?.status.code).toBe(SpanStatusCode.UNSET);
    expect(byKey(poison)?.status.code).toBe(SpanStatusCode.ERROR);
    // A record without a producer's context links to nothing.
    expect(byKey(behind)?.links).toEqual([]);
  });

  it('says given back, not failed, for a copy whose key another invocation holds', async () => {
    const { queue, dlq } = await world.queuePair();
    const mail = key('held');
    await send(queue, [{ type: 'Mail', groupId: 'g', key: mail }]);
    const event = await batchOf(queue, 1);
    let release: () => void = () => undefined;
    const held = new Promise<void>((resolve) => {
      release = resolve;
    });
    let started: () => void = () => undefined;
    const running = new Promise<void>((resolve) => {
      started = resolve;
    });
    const operation = leaseOperation({
      namespace: 'spans',
      mode: 'at-least-once',
      run: async () => {
        started();
        await held;
      },
    });
    const options = consumerOptions(records, { Mail: operation }, dlq);
    // The first invocation holds the key while the same record reaches a second one.
    const first = processFifoBatch(event, lambdaContext(), options);
    await running;
    const second = await processFifoBatch(
      event,
      lambdaContext(),
      consumerOptions(records, { Mail: operation }, dlq),
    );
    release();
    await first;
    expect(second.batchItemFailures).toHaveLength(1);
    const [givenBack, applied] = recordSpans(mail);
    expect(givenBack?.attributes['oncely.outcome']).toBe('given-back');
    expect(givenBack?.status.code).toBe(SpanStatusCode.UNSET);
    expect(applied?.attributes['oncely.outcome']).toBe('applied');
  });

  it('says in doubt for an at-most-once effect whose outcome is unknown', async () => {
    const { queue, dlq } = await world.queuePair();
    const charge = key('unknown');
    await send(queue, [{ type: 'Charge', groupId: 'g', key: charge, trace: PRODUCER }]);
    const uncertain = leaseOperation({
      namespace: 'spans',
      mode: 'at-most-once',
      run: () => {
        throw new OutcomeUnknownError('the card network timed out');
      },
    });
    const event = await batchOf(queue, 1);
    const logger = capturingLogger();
    await processFifoBatch(
      event,
      lambdaContext(),
      consumerOptions(records, { Charge: uncertain }, dlq, { logger }),
    );
    expect(outcomes(recordSpans(charge))).toEqual([[charge, 'in-doubt']]);
    expect(loggedOutcome(logger, charge)).toBe('in-doubt');
  });

  it('says deferred for a record not started for lack of time', async () => {
    const { queue, dlq } = await world.queuePair();
    const [first, second] = [key('first'), key('second')];
    await send(queue, [
      { type: 'Mail', groupId: 'a', key: first },
      { type: 'Mail', groupId: 'b', key: second },
    ]);
    // The first record's effect takes the invocation's time: too little is left to start the next.
    let remainingMs = 30_000;
    const mail = leaseOperation({
      namespace: 'spans',
      mode: 'at-least-once',
      run: () => {
        remainingMs = 2_000;
      },
    });
    const event = await batchOf(queue, 2);
    const context = { ...lambdaContext(), getRemainingTimeInMillis: () => remainingMs };
    const response = await processFifoBatch(event, context, {
      ...consumerOptions(records, { Mail: mail }, dlq),
      recordTimeReserveMs: 5_000,
      maxConcurrentGroups: 1,
    });
    expect(response.batchItemFailures).toHaveLength(1);
    expect(outcomes(recordSpans(first, second))).toEqual([
      [first, 'applied'],
      [second, 'deferred'],
    ]);
  });

  it('ends every span as given back when the whole batch fails', async () => {
    const { queue, dlq } = await world.queuePair();
    const [one, two] = [key('one'), key('two')];
    await send(queue, [
      { type: 'Mail', groupId: 'a', key: one },
      { type: 'Mail', groupId: 'b', key: two },
    ]);
    // The store unreachable for every write: reads alone answer.
    const steps = steppedStore(records.store());
    for (const step of WRITES) {
      steps.fail(
        step,
        () => true,
        () => Object.assign(new Error('connect ECONNREFUSED 127.0.0.1:8000'), { code: 'ECONNREFUSED' }),
      );
    }
    const mail = leaseOperation({ namespace: 'spans', mode: 'at-least-once', run: () => undefined });
    const event = await batchOf(queue, 2);
    await expect(
      processFifoBatch(
        event,
        lambdaContext(),
        consumerOptions(records, { Mail: mail }, dlq, { store: steps.store }),
      ),
    ).rejects.toThrow();
    expect(steps.count('acquire')).toBeGreaterThan(0);
    const found = recordSpans(one, two);
    expect(found.map((span) => span.attributes['oncely.outcome'])).toEqual(['given-back', 'given-back']);
  });

  it("a standard queue's records get theirs too", async () => {
    const { queue, dlq } = await createStandardQueueWithDlq(world.sqs, {
      visibilityTimeoutSeconds: 3,
      maxReceiveCount: 5,
    });
    world.own(queue, dlq);
    const mail = key('standard');
    await send(queue, [{ type: 'Mail', groupId: 'tenant-1', key: mail, trace: PRODUCER }]);
    const operation = leaseOperation({ namespace: 'spans', mode: 'at-least-once', run: () => undefined });
    const event = await batchOf(queue, 1);
    await processStandardBatch(event, lambdaContext(), consumerOptions(records, { Mail: operation }, dlq));
    const [span] = recordSpans(mail);
    expect(span?.attributes).toMatchObject({
      'oncely.outcome': 'applied',
      'oncely.message.group': 'tenant-1',
    });
    expect(linksOf(span as ReadableSpan)).toEqual([PRODUCER.traceparent]);
    expect(traceparentOf(span as ReadableSpan)).not.toBe(PRODUCER.traceparent);
  });
});
