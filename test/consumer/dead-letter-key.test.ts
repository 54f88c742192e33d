import { randomUUID } from 'node:crypto';
import { ChangeMessageVisibilityCommand } from '@aws-sdk/client-sqs';
import type { SQSEvent } from 'aws-lambda';
import { describe, expect, it } from 'vitest';
import { redriveDeadLetters } from '../../cli/dead-letter-redrive.js';
import { describeRedrive } from '../../cli/operations-report.js';
import { createEnvelope, parseReceivedEnvelope } from '../../lambdas/common/envelope.js';
import { type ConsumerOperation, leaseOperation, processFifoBatch } from '../../lambdas/consumer/index.js';
import { LOCAL_REGION } from '../../sandbox/local-aws-config.js';
import { toSqsRecord } from '../../sandbox/sqs-event.js';
import { consumerTestWorld } from '../support/consumer-world.js';
import { lambdaContext } from '../support/lambda-context.js';
import { LEASE_STORES, type LeaseRecords, leaseRecords } from '../support/lease-stores.js';
import { type FifoQueue, receiveMessages, sendBody } from '../support/sqs.js';
import { metricsRecorder, silentLogger } from '../support/telemetry.js';

// Issue 42, item 8: an envelope without `key` (a producer other than Oncely's publisher, keying by
// its MessageDeduplicationId) keeps that key through the DLQ and a redrive. SQS replaces the
// deduplication id when it moves a message to a FIFO DLQ, and the redrive sends with one of its own:
// so the consumer's DLQ copy carries the key in its body, and the redrive moves no envelope without
// one, since it would run under a key that is not its own.

const world = consumerTestWorld();

/** A keyless envelope's body, with a payload whose text JSON.parse would not give back (a big integer). */
function keylessBody(type: string): string {
  const { key: _key, ...envelope } = createEnvelope({ type, groupId: 'g', payload: { n: 1 } });
  return JSON.stringify(envelope).replace('{"n":1}', '{"n":12345678901234567890123}');
}

/** The run's operation: fails the first time it sees a key (dead-lettered at `maxAttempts` 1), and records each key it ran. */
function failingOnce() {
  const keys: string[] = [];
  const operation: ConsumerOperation = leaseOperation({
    namespace: 'dlq-key',
    mode: 'at-least-once',
    run: (message) => {
      keys.push(message.key);
      if (keys.filter((key) => key === message.key).length === 1) throw new Error('not yet');
      return {};
    },
  });
  return { keys, operations: { Keyless: operation } };
}

async function consumeOne(
  records: LeaseRecords,
  queue: FifoQueue,
  dlq: FifoQueue,
  operations: Record<string, ConsumerOperation>,
) {
  const messages = await receiveMessages(world.sqs, queue.url, 1);
  expect(messages).toHaveLength(1);
  const event: SQSEvent = {
    Records: messages.map((message) => toSqsRecord(message, queue.arn, LOCAL_REGION)),
  };
  return processFifoBatch(event, lambdaContext(), {
    operations,
    store: records.store(),
    deadLetterQueue: { client: world.sqs, queueUrl: dlq.url, sourceQueueUrl: queue.url },
    maxAttempts: 1,
    logger: silentLogger(),
    metrics: metricsRecorder(),
  });
}

const resourcesOf = (queue: FifoQueue, dlq: FifoQueue) => ({
  queueUrl: queue.url,
  dlqUrl: dlq.url,
  idempotencyTtlSeconds: String(19 * 86_400),
});

describe.each(LEASE_STORES)('an envelope without a key, through the DLQ (records in %s)', (storeName) => {
  const records = leaseRecords(storeName);

  it("keeps its deduplication id as its key: in the consumer's DLQ copy, and after a redrive", async () => {
    const { queue, dlq } = await world.queuePair();
    const key = `producer-${randomUUID()}`;
    const body = keylessBody('Keyless');
    await sendBody(world.sqs, queue.url, body, 'g', key);
    const { keys, operations } = failingOnce();

    expect((await consumeOne(records, queue, dlq, operations)).batchItemFailures).toEqual([]);
    const [copy] = await receiveMessages(world.sqs, dlq.url, 1);
    expect(parseReceivedEnvelope(String(copy?.Body)).key).toBe(key);
    // The key is written in; nothing else of the body changes, to the byte.
    expect(String(copy?.Body).replace(`"key":"${key}",`, '')).toBe(body);

    await world.sqs.send(
      new ChangeMessageVisibilityCommand({
        QueueUrl: dlq.url,
        ReceiptHandle: copy?.ReceiptHandle,
        VisibilityTimeout: 0,
      }),
    );

    // Redriven, the consumer runs it under the same key.
    const redrive = await redriveDeadLetters(world.sqs, resourcesOf(queue, dlq), { timeoutMs: 30_000 });
    expect(redrive).toMatchObject({ finished: true, moved: 1, skipped: [] });
    expect((await consumeOne(records, queue, dlq, operations)).batchItemFailures).toEqual([]);
    expect(keys).toEqual([key, key]);
  });
});

describe('an envelope without a key, in the DLQ', () => {
  it('is left in the DLQ by a redrive once its key is gone (SQS moved it), and says why', async () => {
    const { queue, dlq } = await world.queuePair();
    // As SQS moves a message to a FIFO DLQ after maxReceiveCount: its deduplication id replaced.
    const messageId = await sendBody(world.sqs, dlq.url, keylessBody('Keyless'), 'g', randomUUID());

    const redrive = await redriveDeadLetters(world.sqs, resourcesOf(queue, dlq), { timeoutMs: 30_000 });

    expect(redrive).toMatchObject({
      finished: true,
      moved: 0,
      skipped: [{ messageId, groupId: 'g', reason: 'key-lost' }],
    });
    expect(describeRedrive(redrive, queue.url)).toContain(
      `Left 1 message without a key in the DLQ: each was keyed by its deduplication id`,
    );
    expect(await receiveMessages(world.sqs, queue.url, 1, 1_500)).toEqual([]);
    expect(await receiveMessages(world.sqs, dlq.url, 1)).toHaveLength(1);
  });
});
