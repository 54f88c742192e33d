import { CreateTableCommand, type DynamoDBClient, QueryCommand } from '@aws-sdk/client-dynamodb';
import type { SQSClient } from '@aws-sdk/client-sqs';
import { DynamoDBDocumentClient, GetCommand } from '@aws-sdk/lib-dynamodb';
import type { DynamoDBStreamEvent } from 'aws-lambda';
import { isFifoQueueUrl } from '../../lambdas/common/queue-type.js';
import {
  groupPartition,
  itemKey,
  OUTBOX_ATTRIBUTES,
  OUTBOX_PENDING_INDEX,
  type OutboxLayout,
} from '../../lambdas/outbox/layout.js';
import { type OutboxItem, OutboxItems, toItem } from '../../lambdas/outbox/outbox-items.js';
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
        { AttributeName: OUTBOX_ATTRIBUTES.pendingSince, AttributeType: 'S' },
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
            { AttributeName: OUTBOX_ATTRIBUTES.pendingSince, KeyType: 'RANGE' },
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

/** The stream event the relay would get for these groups' pending markers (the filter passes only those). */
export async function markerInserts(
  client: DynamoDBClient,
  layout: OutboxLayout,
  groupIds: string[],
): Promise<DynamoDBStreamEvent> {
  const images = [];
  for (const groupId of groupIds) {
    const { Items = [] } = await client.send(
      new QueryCommand({
        TableName: layout.tableName,
        KeyConditionExpression: 'pk = :group',
        ExpressionAttributeValues: { ':group': { S: groupPartition(groupId) } },
        ConsistentRead: true,
      }),
    );
    images.push(...Items);
  }
  return {
    Records: images.map((image, i) => ({
      eventName: 'INSERT',
      dynamodb: { NewImage: image as never, SequenceNumber: String(1000 + i) },
    })),
  };
}

/** A message's outbox item, read strongly consistent. */
export async function outboxItemOf(
  client: DynamoDBClient,
  layout: OutboxLayout,
  key: string,
): Promise<OutboxItem> {
  const { Item } = await DynamoDBDocumentClient.from(client).send(
    new GetCommand({ TableName: layout.tableName, Key: itemKey(layout, key), ConsistentRead: true }),
  );
  return toItem(Item as Record<string, unknown>);
}
