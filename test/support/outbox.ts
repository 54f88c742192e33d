import { CreateTableCommand, type DynamoDBClient } from '@aws-sdk/client-dynamodb';
import type { SQSClient } from '@aws-sdk/client-sqs';
import { isFifoQueueUrl } from '../../lambdas/common/queue-type.js';
import { OUTBOX_ATTRIBUTES, OUTBOX_PENDING_INDEX, type OutboxLayout } from '../../lambdas/outbox/layout.js';
import { OutboxItems } from '../../lambdas/outbox/outbox-items.js';
import type { SenderOptions } from '../../lambdas/outbox/relay.js';
import { sqsBatchSender } from '../../lambdas/publisher/sqs-batch.js';
import { uniqueName } from './dynamodb.js';
import { FAST_RETRY } from './publisher.js';

/** A table shaped as the OncelyOutbox construct declares its own: string pk/sk, the sparse pending index. */
export async function createOutboxTable(client: DynamoDBClient, prefix = 'outbox'): Promise<OutboxLayout> {
  const layout = { tableName: uniqueName(prefix), partitionKey: 'pk', sortKey: 'sk' };
  await client.send(
    new CreateTableCommand({
      TableName: layout.tableName,
      AttributeDefinitions: [
        { AttributeName: 'pk', AttributeType: 'S' },
        { AttributeName: 'sk', AttributeType: 'S' },
        { AttributeName: OUTBOX_ATTRIBUTES.pending, AttributeType: 'S' },
        { AttributeName: OUTBOX_ATTRIBUTES.order, AttributeType: 'S' },
      ],
      KeySchema: [
        { AttributeName: 'pk', KeyType: 'HASH' },
        { AttributeName: 'sk', KeyType: 'RANGE' },
      ],
      GlobalSecondaryIndexes: [
        {
          IndexName: OUTBOX_PENDING_INDEX,
          KeySchema: [
            { AttributeName: OUTBOX_ATTRIBUTES.pending, KeyType: 'HASH' },
            { AttributeName: OUTBOX_ATTRIBUTES.order, KeyType: 'RANGE' },
          ],
          Projection: {
            ProjectionType: 'INCLUDE',
            NonKeyAttributes: [OUTBOX_ATTRIBUTES.key, OUTBOX_ATTRIBUTES.groupId],
          },
        },
      ],
      BillingMode: 'PAY_PER_REQUEST',
      StreamSpecification: { StreamEnabled: true, StreamViewType: 'NEW_IMAGE' },
    }),
  );
  return layout;
}

/** What the relay and the sweeper need, on the run's emulators, with fast retries. */
export function senderOptions(
  dynamodb: DynamoDBClient,
  sqs: SQSClient,
  layout: OutboxLayout,
  queueUrl: string,
  options: { now?: () => number; claimMs?: number } = {},
): SenderOptions {
  return {
    items: new OutboxItems({ client: dynamodb, layout, now: options.now }),
    sendBatch: sqsBatchSender(sqs, queueUrl),
    maxBatchBytes: 262_144,
    // As senderFromEnvironment decides it.
    ordered: isFifoQueueUrl(queueUrl),
    retry: FAST_RETRY,
    claimMs: () => options.claimMs ?? 30_000,
  };
}
