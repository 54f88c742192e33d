import { randomUUID } from 'node:crypto';
import type { DynamoDBClient } from '@aws-sdk/client-dynamodb';
import {
  CreateQueueCommand,
  DeleteQueueCommand,
  GetQueueAttributesCommand,
  type SQSClient,
} from '@aws-sdk/client-sqs';
import { DynamoDBDocumentClient, paginateScan } from '@aws-sdk/lib-dynamodb';
import type { LocalQueue } from '../sandbox/local-resources.js';
import { createIdempotencyTable, createKeyedTable } from '../sandbox/tables.js';

/** A name no earlier measurement of the run used: every measurement starts from empty tables and queues. */
export function uniqueName(prefix: string): string {
  return `${prefix}-${randomUUID().slice(0, 8)}`;
}

/** A new idempotency table as the stack makes it (string `id`, TTL on `expiresAt`); Powertools' fits it too. */
export async function newIdempotencyTable(dynamodb: DynamoDBClient, prefix = 'idempotency'): Promise<string> {
  const name = uniqueName(prefix);
  await createIdempotencyTable(dynamodb, name);
  return name;
}

/** A new business table keyed by a string `id`, as the ledger. */
export async function newLedgerTable(dynamodb: DynamoDBClient): Promise<string> {
  const name = uniqueName('ledger');
  await createKeyedTable(dynamodb, name);
  return name;
}

/** A FIFO queue and its FIFO DLQ, wired as the stack wires them. */
export async function createQueueWithDlq(sqs: SQSClient): Promise<{ queue: LocalQueue; dlq: LocalQueue }> {
  const dlq = await createFifoQueue(sqs, {});
  const queue = await createFifoQueue(sqs, {
    VisibilityTimeout: '30',
    RedrivePolicy: JSON.stringify({ deadLetterTargetArn: dlq.arn, maxReceiveCount: 5 }),
  });
  return { queue, dlq };
}

export function createFifoQueue(sqs: SQSClient, attributes: Record<string, string>): Promise<LocalQueue> {
  return createQueue(sqs, `${uniqueName('bench')}.fifo`, { FifoQueue: 'true', ...attributes });
}

export function createStandardQueue(sqs: SQSClient, attributes: Record<string, string>): Promise<LocalQueue> {
  return createQueue(sqs, uniqueName('bench'), attributes);
}

async function createQueue(
  sqs: SQSClient,
  name: string,
  attributes: Record<string, string>,
): Promise<LocalQueue> {
  const { QueueUrl } = await sqs.send(new CreateQueueCommand({ QueueName: name, Attributes: attributes }));
  if (!QueueUrl) throw new Error(`CreateQueue returned no QueueUrl for ${name}`);
  const { Attributes } = await sqs.send(
    new GetQueueAttributesCommand({ QueueUrl, AttributeNames: ['QueueArn'] }),
  );
  if (!Attributes?.QueueArn) throw new Error(`GetQueueAttributes returned no QueueArn for ${name}`);
  return { logicalId: name, name, url: QueueUrl, arn: Attributes.QueueArn };
}

export async function deleteQueues(sqs: SQSClient, queues: readonly LocalQueue[]): Promise<void> {
  await Promise.all(queues.map(({ url }) => sqs.send(new DeleteQueueCommand({ QueueUrl: url }))));
}

/** The sum of one numeric attribute over a table: what the consumers' effects add up to. */
export async function sumOfAttribute(
  dynamodb: DynamoDBClient,
  tableName: string,
  attribute: string,
): Promise<number> {
  const documents = DynamoDBDocumentClient.from(dynamodb);
  let sum = 0;
  for await (const page of paginateScan(
    { client: documents },
    { TableName: tableName, ConsistentRead: true },
  )) {
    for (const item of page.Items ?? []) sum += Number(item[attribute] ?? 0);
  }
  return sum;
}
