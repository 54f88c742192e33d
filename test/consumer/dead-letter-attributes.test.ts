import { randomUUID } from 'node:crypto';
import { type MessageAttributeValue, SendMessageCommand } from '@aws-sdk/client-sqs';
import type { SQSEvent } from 'aws-lambda';
import { describe, expect, it } from 'vitest';
import { createEnvelope } from '../../lambdas/common/envelope.js';
import { awsTraceHeaderOf } from '../../lambdas/common/trace-context.js';
import {
  type ConsumerOperation,
  DLQ_ATTRIBUTES,
  leaseOperation,
  processFifoBatch,
  processStandardBatch,
} from '../../lambdas/consumer/index.js';
import { LOCAL_REGION } from '../../sandbox/local-aws-config.js';
import { toSqsRecord } from '../../sandbox/sqs-event.js';
import { consumerTestWorld } from '../support/consumer-world.js';
import { lambdaContext } from '../support/lambda-context.js';
import { LEASE_STORES, type LeaseRecords, leaseRecords } from '../support/lease-stores.js';
import { createStandardQueueWithDlq, type FifoQueue, receiveMessages } from '../support/sqs.js';
import { metricsRecorder, silentLogger } from '../support/telemetry.js';

// Issue 40, item 14: a record the consumer sends to the DLQ keeps the producer's message
// attributes (a redrive hands them back to the consumers), beside the consumer's own four, within
// SQS's 10 per message. Both DLQ paths, fifoBatch's and standardBatch's, through the emulator.

const world = consumerTestWorld();

const operations: Record<string, ConsumerOperation> = {
  Named: leaseOperation({ namespace: 'dlq-attributes', mode: 'at-least-once', run: () => ({}) }),
};

const text = (value: string): MessageAttributeValue => ({ DataType: 'String', StringValue: value });

/** The producer's attributes of every kind SQS takes: String, Number, Binary, and a custom type. */
const PRODUCER_ATTRIBUTES: Record<string, MessageAttributeValue> = {
  tenant: text('acme'),
  priority: { DataType: 'Number', StringValue: '7' },
  signature: { DataType: 'Binary', BinaryValue: Uint8Array.from([0, 1, 254, 255]) },
  traceparent: { DataType: 'String.w3c', StringValue: '00-abc-def-01' },
};

/** Sends a poison message (no operation takes its type) with `attributes`; on FIFO in group `g`. */
async function sendPoison(
  queue: FifoQueue,
  attributes: Record<string, MessageAttributeValue>,
  awsTraceHeader?: string,
) {
  const envelope = createEnvelope({ type: 'NoSuchType', groupId: 'g', key: randomUUID(), payload: {} });
  const fifo = queue.url.endsWith('.fifo');
  await world.sqs.send(
    new SendMessageCommand({
      QueueUrl: queue.url,
      MessageBody: JSON.stringify(envelope),
      MessageAttributes: attributes,
      ...awsTraceHeaderOf(awsTraceHeader),
      ...(fifo ? { MessageGroupId: 'g', MessageDeduplicationId: envelope.key } : {}),
    }),
  );
}

async function receiveEvent(queue: FifoQueue): Promise<SQSEvent> {
  const messages = await receiveMessages(world.sqs, queue.url, 1);
  expect(messages).toHaveLength(1);
  return { Records: messages.map((message) => toSqsRecord(message, queue.arn, LOCAL_REGION)) };
}

/** The consumer claims and marks its DLQ sends in the store's records (DESIGN §5). */
function consumerOptions(records: LeaseRecords, dlq: FifoQueue) {
  return {
    operations,
    store: records.store(),
    deadLetterQueue: { client: world.sqs, queueUrl: dlq.url },
    logger: silentLogger(),
    metrics: metricsRecorder(),
  };
}

/** The attributes of the one copy in `dlq`, as the SDK reads them. */
async function deadLetterAttributes(dlq: FifoQueue) {
  const [copy] = await receiveMessages(world.sqs, dlq.url, 1);
  return copy?.MessageAttributes ?? {};
}

/** The one copy in `dlq`'s `AWSTraceHeader` system attribute. */
async function deadLetterTraceHeader(dlq: FifoQueue) {
  const [copy] = await receiveMessages(world.sqs, dlq.url, 1);
  return copy?.Attributes?.AWSTraceHeader;
}

function expectProducerAttributes(attributes: Record<string, MessageAttributeValue>) {
  expect(attributes.tenant?.StringValue).toBe('acme');
  expect(attributes.priority).toMatchObject({ DataType: 'Number', StringValue: '7' });
  expect(attributes.signature?.DataType).toBe('Binary');
  expect([...(attributes.signature?.BinaryValue ?? [])]).toEqual([0, 1, 254, 255]);
  expect(attributes.traceparent).toMatchObject({ DataType: 'String.w3c', StringValue: '00-abc-def-01' });
}

describe.each(LEASE_STORES)("the consumer's DLQ copy (records in %s)", (storeName) => {
  const records = leaseRecords(storeName);

  it("standardBatch's keeps the producer's attributes beside its own", async () => {
    const { queue, dlq } = await createStandardQueueWithDlq(world.sqs, {
      visibilityTimeoutSeconds: 30,
      maxReceiveCount: 5,
    });
    world.own(queue, dlq);
    await sendPoison(queue, PRODUCER_ATTRIBUTES);

    const response = await processStandardBatch(
      await receiveEvent(queue),
      lambdaContext(),
      consumerOptions(records, dlq),
    );

    expect(response.batchItemFailures).toEqual([]);
    const attributes = await deadLetterAttributes(dlq);
    expectProducerAttributes(attributes);
    expect(attributes[DLQ_ATTRIBUTES.errorName]?.StringValue).toBe('UnknownMessageTypeError');
    expect(Object.keys(attributes)).toHaveLength(8);
  });

  it("fifoBatch's keeps the producer's attributes beside its own", async () => {
    const { queue, dlq } = await world.queuePair();
    await sendPoison(queue, PRODUCER_ATTRIBUTES);

    const response = await processFifoBatch(
      await receiveEvent(queue),
      lambdaContext(),
      consumerOptions(records, dlq),
    );

    expect(response.batchItemFailures).toEqual([]);
    const attributes = await deadLetterAttributes(dlq);
    expectProducerAttributes(attributes);
    expect(attributes[DLQ_ATTRIBUTES.originalMessageId]?.StringValue).toBeDefined();
    expect(Object.keys(attributes)).toHaveLength(8);
  });

  it("keeps the producer's X-Ray header, the AWSTraceHeader system attribute (DESIGN §6)", async () => {
    const { queue, dlq } = await world.queuePair();
    const header = 'Root=1-5759e988-bd862e3fe1be46a994272793;Parent=53995c3f42cd8ad8;Sampled=1';
    await sendPoison(queue, PRODUCER_ATTRIBUTES, header);

    const response = await processFifoBatch(
      await receiveEvent(queue),
      lambdaContext(),
      consumerOptions(records, dlq),
    );

    expect(response.batchItemFailures).toEqual([]);
    expect(await deadLetterTraceHeader(dlq)).toBe(header);
  });

  it("keeps all of the producer's 10 but its stale ErrorName: its own beyond SQS's 10 are dropped", async () => {
    const { queue, dlq } = await createStandardQueueWithDlq(world.sqs, {
      visibilityTimeoutSeconds: 30,
      maxReceiveCount: 5,
    });
    world.own(queue, dlq);
    // A redriven message carries the attributes of its earlier dead-lettering: its ErrorName is replaced.
    const ten = Object.fromEntries([
      ...Array.from({ length: 9 }, (_, index) => [`a${index}`, text(`v${index}`)]),
      [DLQ_ATTRIBUTES.errorName, text('AnEarlierError')],
    ]);
    await sendPoison(queue, ten);

    const response = await processStandardBatch(
      await receiveEvent(queue),
      lambdaContext(),
      consumerOptions(records, dlq),
    );

    expect(response.batchItemFailures).toEqual([]);
    const attributes = await deadLetterAttributes(dlq);
    expect(Object.keys(attributes).sort()).toEqual(Object.keys(ten).sort());
    expect(attributes.a8?.StringValue).toBe('v8');
    expect(attributes[DLQ_ATTRIBUTES.errorName]?.StringValue).toBe('UnknownMessageTypeError');
  });
});
