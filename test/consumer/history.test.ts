import { randomUUID } from 'node:crypto';
import type { DynamoDBClient } from '@aws-sdk/client-dynamodb';
import type { SQSClient } from '@aws-sdk/client-sqs';
import middy from '@middy/core';
import type { SQSBatchResponse, SQSEvent } from 'aws-lambda';
import { beforeAll, describe, expect, it } from 'vitest';
import { readMessageHistory } from '../../cli/message-history.js';
import { messagesInQueue } from '../../lambdas/common/queue-depth.js';
import { fifoBatch, leaseOperation, transactionalOperation } from '../../lambdas/consumer/index.js';
import { DynamoDBIdempotencyStore } from '../../lambdas/idempotency/index.js';
import { consumerTestWorld } from '../support/consumer-world.js';
import { localDynamoClient } from '../support/dynamodb.js';
import { failRequests } from '../support/sdk-middleware.js';
import { type FifoQueue, named, publish, receiveMessages } from '../support/sqs.js';
import { pollUntil } from '../support/sqs-event-source.js';
import { metricsRecorder, silentLogger } from '../support/telemetry.js';

// DESIGN §3 (the history) and §5 (the dead-letter log), through the consumer: what its real writes
// leave for `oncely history` to tell, read back by key as the command reads it.

const world = consumerTestWorld('consumer-history');
let dynamodb: DynamoDBClient;
let sqs: SQSClient;
let table: string;
beforeAll(() => {
  ({ dynamodb, sqs } = world);
  [table] = world.tables as [string];
});

function consumer(
  operations: Parameters<typeof fifoBatch>[0]['operations'],
  dlqUrl: string,
  client = dynamodb,
) {
  const store = new DynamoDBIdempotencyStore({ client, tableName: table });
  return middy<SQSEvent, SQSBatchResponse>().use(
    fifoBatch({
      store,
      operations,
      deadLetterQueue: { client: sqs, queueUrl: dlqUrl },
      logger: silentLogger(),
      metrics: metricsRecorder(),
      maxAttempts: 2,
    }),
  );
}

/** A transactional operation whose plan always fails (retryably): dead-lettered after its attempts, no record written. */
const unplannable = () =>
  transactionalOperation({
    namespace: `history-${randomUUID().slice(0, 8)}`,
    plan: () => {
      throw new Error('the plan cannot be made');
    },
  });

const drained = (queue: FifoQueue) => async () => (await messagesInQueue(sqs, queue.url)) === 0;
const story = (key: string, recordId: string) =>
  readMessageHistory(
    { name: 'the test table', outputs: {}, dynamodb, resources: { idempotencyTableName: table } },
    { key, recordIds: [recordId] },
  );

describe.concurrent('what the consumer leaves for `oncely history`', () => {
  it('lease mode: two failed runs, dead-lettered, redriven, applied — each step with its message, attempt and lease', async () => {
    const { queue, dlq } = await world.queuePair({ maxReceiveCount: 5 });
    let runs = 0;
    const operation = leaseOperation({
      namespace: `history-${randomUUID().slice(0, 8)}`,
      mode: 'at-least-once',
      run: () => {
        runs++;
        if (runs <= 2) throw new Error('the mail service is down');
        return 'sent';
      },
    });
    const handler = consumer({ Named: operation }, dlq.url);
    const message = named('G', 'mail');
    await publish(sqs, queue.url, message);
    await pollUntil(sqs, queue, handler, drained(queue), { timeoutMs: 60_000 });
    const [deadLettered] = await receiveMessages(sqs, dlq.url, 1);
    expect(deadLettered).toBeDefined();
    // The redrive: a new message, the same key.
    await publish(sqs, queue.url, message, randomUUID());
    await pollUntil(sqs, queue, handler, drained(queue), { timeoutMs: 60_000 });
    expect(runs).toBe(3);

    const recordId = `${operation.namespace}#${message.key}`;
    const told = await story(message.key, recordId);
    expect(told.steps.map((step) => [step.source, step.event, step.attempt])).toEqual([
      ['envelope', 'published', undefined],
      ['record', 'delivered: lease taken', undefined],
      ['record', 'effect failed: to be retried', 1],
      ['record', 'delivered: lease taken', undefined],
      ['record', 'effect failed: dead-lettered', 2],
      ['dlq', 'sent to the DLQ', undefined],
      ['record', 'delivered (a redriven copy): lease taken', undefined],
      ['record', 'effect applied', 3],
    ]);
    const [, first, , second, failed, sent, redriven, applied] = told.steps;
    expect(second?.messageId).toBe(first?.messageId);
    expect([second?.receiveCount, failed?.messageId, sent?.messageId]).toEqual([
      2,
      first?.messageId,
      first?.messageId,
    ]);
    expect(sent?.detail).toBe('AttemptsExhaustedError');
    expect(redriven?.messageId).not.toBe(first?.messageId);
    // Each outcome names the lease of the delivery before it; each delivery a lease of its own.
    expect(applied?.lease).toBe(redriven?.lease);
    expect(new Set([first?.lease, second?.lease, redriven?.lease]).size).toBe(3);
    expect(told.records).toEqual([
      expect.objectContaining({ id: recordId, status: 'COMPLETED', attempts: 3 }),
    ]);
  });

  it('transactional mode, whose failures write no record: the DLQ send is in the log all the same', async () => {
    const { queue, dlq } = await world.queuePair({ maxReceiveCount: 5 });
    const operation = unplannable();
    const handler = consumer({ Named: operation }, dlq.url);
    const message = named('G', 'ledger');
    await publish(sqs, queue.url, message);
    await pollUntil(sqs, queue, handler, drained(queue), { timeoutMs: 60_000 });
    const told = await story(message.key, `${operation.namespace}#${message.key}`);
    expect(told.steps.map((step) => [step.source, step.event, step.detail])).toEqual([
      ['dlq', 'sent to the DLQ', 'AttemptsExhaustedError'],
    ]);
    expect(told.next).toEqual([expect.stringContaining('sent to the DLQ. Fix the cause')]);
  });

  it('a dead-letter log write that fails leaves the message in the DLQ, acknowledged: the story only misses it', async () => {
    const { queue, dlq } = await world.queuePair({ maxReceiveCount: 5 });
    const operation = unplannable();
    const client = localDynamoClient();
    const failing = failRequests(
      client,
      (name, input) => name === 'UpdateItem' && JSON.stringify(input.Key).includes('oncely/dead-letters#'),
    );
    const handler = consumer({ Named: operation }, dlq.url, client);
    const message = named('G', 'ledger');
    await publish(sqs, queue.url, message);
    await pollUntil(sqs, queue, handler, drained(queue), { timeoutMs: 60_000 });
    expect(failing.failures).toBeGreaterThan(0);
    expect(await messagesInQueue(sqs, dlq.url)).toBe(1);
    expect((await story(message.key, `${operation.namespace}#${message.key}`)).steps).toEqual([]);
    client.destroy();
  });
});
