import { randomUUID } from 'node:crypto';
import type { DynamoDBClient } from '@aws-sdk/client-dynamodb';
import type { SQSClient } from '@aws-sdk/client-sqs';
import type { SQSBatchResponse, SQSEvent, SQSRecord } from 'aws-lambda';
import { afterAll, beforeAll, describe, expect, it, onTestFailed } from 'vitest';
import { createEnvelope } from '../../lambdas/common/envelope.js';
import { CONSUMER_ENVIRONMENT } from '../../lambdas/consumer/environment.js';
import { recordId } from '../../lambdas/idempotency/keys.js';
import { SHOP_ENVIRONMENT } from '../../lambdas/shop/consumer/environment.js';
import { REMINDERS_NAMESPACE } from '../../lambdas/shop/consumer/notifications.js';
import { createTable, localDynamoClient, readItem } from '../support/dynamodb.js';
import { emulatorEndpoint } from '../support/emulator-endpoint.js';
import { createQueueWithDlq, deleteQueues, type FifoQueue, localSqsClient } from '../support/sqs.js';
import {
  bundleHandler,
  bundlesDirectory,
  emulatorEnvironment,
  type HoldingGateway,
  type ManagedFunction,
  managedFunction,
  removeBundles,
  startHoldingGateway,
  until,
} from './managed-function.js';

// The consumer as the stack bundles it (the example shop's, on `fifoBatch`), two invocations at once
// in one container as on Lambda Managed Instances: one is held inside an effect (the gateway does
// not answer it) while the other runs whole. Each must keep its own request id in its logs, its own
// counts in its metrics, its own deadline in its leases; the completed-record cache is shared.

const TIMEOUT_SECONDS = 30;
let directory: string;
let dynamodb: DynamoDBClient;
let sqs: SQSClient;
let gateway: HoldingGateway;
let idempotencyTable: string;
let consumer: ManagedFunction;
const queues: FifoQueue[] = [];

beforeAll(async () => {
  directory = await bundlesDirectory();
  dynamodb = localDynamoClient();
  sqs = localSqsClient();
  // A reminder whose subject is "hold" waits for the test; every other one is accepted.
  gateway = await startHoldingGateway((body) => (body as { subject?: string }).subject === 'hold');
  const [codeDirectory, table, ledger, { queue, dlq }] = await Promise.all([
    bundleHandler('lambdas/shop/consumer/handler.ts', directory, 'consumer'),
    createTable(dynamodb, 'managed-idem'),
    createTable(dynamodb, 'managed-ledger'),
    createQueueWithDlq(sqs, { visibilityTimeoutSeconds: 30, maxReceiveCount: 50 }),
  ]);
  idempotencyTable = table;
  queues.push(queue, dlq);
  consumer = managedFunction({
    name: 'managed-consumer',
    codeDirectory,
    timeoutSeconds: TIMEOUT_SECONDS,
    environment: {
      ...emulatorEnvironment({
        dynamodb: emulatorEndpoint('dynamodbEndpoint'),
        sqs: emulatorEndpoint('sqsEndpoint'),
      }),
      [CONSUMER_ENVIRONMENT.idempotencyTableName]: idempotencyTable,
      [CONSUMER_ENVIRONMENT.dlqUrl]: dlq.url,
      [CONSUMER_ENVIRONMENT.queueUrl]: queue.url,
      [SHOP_ENVIRONMENT.ledgerTableName]: ledger,
      [SHOP_ENVIRONMENT.notificationUrl]: gateway.url,
      [SHOP_ENVIRONMENT.notificationTimeoutMs]: String((TIMEOUT_SECONDS - 5) * 1000),
      POWERTOOLS_SERVICE_NAME: 'managed-consumer',
      POWERTOOLS_METRICS_NAMESPACE: 'OncelyManagedTest',
      POWERTOOLS_LOG_LEVEL: 'INFO',
    },
  });
}, 240_000);

afterAll(async () => {
  await consumer?.runtime.stop();
  await gateway?.close();
  if (sqs) await deleteQueues(sqs, queues);
  sqs?.destroy();
  dynamodb?.destroy();
  await removeBundles(directory);
});

/** The record the event source hands the consumer for a reminder of `key` in `groupId`. */
function reminder(groupId: string, key: string, subject = 'Your order'): SQSRecord {
  const envelope = createEnvelope({
    type: 'SendReminder',
    groupId,
    key,
    payload: { to: 'ada@example.com', subject, body: 'It ships today.' },
  });
  const messageId = randomUUID();
  return {
    messageId,
    receiptHandle: messageId,
    body: JSON.stringify(envelope),
    attributes: {
      ApproximateReceiveCount: '1',
      SentTimestamp: String(Date.now()),
      SenderId: 'test',
      ApproximateFirstReceiveTimestamp: String(Date.now()),
      MessageGroupId: groupId,
      MessageDeduplicationId: key,
    },
    messageAttributes: {},
    md5OfBody: '',
    eventSource: 'aws:sqs',
    eventSourceARN: queues[0]?.arn ?? 'arn:aws:sqs:us-east-1:000000000000:q.fifo',
    awsRegion: 'us-east-1',
  };
}

async function answerOf(
  invocation: ReturnType<ManagedFunction['runtime']['invoke']>,
): Promise<SQSBatchResponse> {
  const answer = await invocation;
  if (!answer.ok) throw new Error(`${answer.error.errorType}: ${answer.error.errorMessage}`);
  return answer.result as SQSBatchResponse;
}

describe('the consumer, two invocations at once in one environment (Lambda Managed Instances)', () => {
  it('keeps each invocation’s request id, metrics and deadline its own, and shares only the completed-record cache', async () => {
    onTestFailed(() => console.log(consumer.lines.join('\n')));
    const run = randomUUID().slice(0, 8);
    const done = `done-${run}`;
    const held = `held-${run}`;
    const other = `other-${run}`;
    // Completed first, in the same container: A's copy of it is then a duplicate, from the cache.
    expect(
      await answerOf(
        consumer.runtime.invoke({ Records: [reminder(`w-${run}`, done)] } satisfies SQSEvent, 'warm-up'),
      ),
    ).toEqual({
      batchItemFailures: [],
    });
    const sentBefore = gateway.keys.length;

    // A: the duplicate (counted at once), then a reminder the gateway holds.
    const a = answerOf(
      consumer.runtime.invoke(
        { Records: [reminder(`a-${run}`, done), reminder(`a-${run}`, held, 'hold')] },
        'invocation-a',
      ),
    );
    await until(() => gateway.hung.length === 1, 'the held reminder to reach the gateway');
    const heldSince = Date.now();
    const heldRecord = await readItem(idempotencyTable, recordId(REMINDERS_NAMESPACE, held));
    // B: runs whole while A waits inside its effect, beside it.
    const b = await answerOf(
      consumer.runtime.invoke({ Records: [reminder(`b-${run}`, other)] }, 'invocation-b'),
    );
    expect(b).toEqual({ batchItemFailures: [] });
    gateway.hung[0]?.writeHead(202).end();
    expect(await a).toEqual({ batchItemFailures: [] });

    // One container ran all three.
    expect(consumer.runtime.usage().heapUsedBytes).toHaveLength(1);
    // The duplicate was answered from the shared cache: no second send of `done`.
    expect(gateway.keys.slice(sentBefore)).toEqual([
      recordId(REMINDERS_NAMESPACE, held),
      recordId(REMINDERS_NAMESPACE, other),
    ]);

    // Each invocation's metrics in its own EMF document, B's published first.
    expect(consumer.metrics().slice(-2)).toEqual([
      { RecordsProcessed: 1 },
      { DuplicateRecords: 1, RecordsProcessed: 1 },
    ]);

    // Each log line about a record carries the request id of the invocation that ran it.
    const requestIdByKey: Record<string, Set<unknown>> = {};
    for (const line of consumer.json()) {
      const key = line.messageKey;
      if (typeof key !== 'string' || !key.endsWith(run)) continue;
      requestIdByKey[`${key}@${line.groupId}`] ??= new Set();
      requestIdByKey[`${key}@${line.groupId}`]?.add(line.function_request_id);
    }
    expect(requestIdByKey).toEqual({
      [`${done}@w-${run}`]: new Set(['warm-up']),
      [`${done}@a-${run}`]: new Set(['invocation-a']),
      [`${held}@a-${run}`]: new Set(['invocation-a']),
      [`${other}@b-${run}`]: new Set(['invocation-b']),
    });

    // A's lease runs to A's deadline (+ its 2 s margin), taken before B started: not B's.
    expect(heldRecord).toMatchObject({ status: 'IN_PROGRESS' });
    expect(Number(heldRecord?.leaseExpiresAt)).toBeLessThanOrEqual(
      heldSince + TIMEOUT_SECONDS * 1000 + 2_000,
    );
  });
});
