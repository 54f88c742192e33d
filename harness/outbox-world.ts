import { CreateTableCommand, DynamoDBClient } from '@aws-sdk/client-dynamodb';
import { SQSClient } from '@aws-sdk/client-sqs';
import { OUTBOX_ATTRIBUTES as A, OUTBOX_PENDING_INDEX, type OutboxLayout } from '../lambdas/outbox/layout.js';
import { localAwsConfig } from '../sandbox/local-aws-config.js';
import type { Emulators } from './chaos-world.js';
import { type FaultProxy, startFaultProxy } from './fault-proxy.js';

/**
 * What the outbox schedules of one worker share: fault proxies in front of the emulators, one
 * outbox table (schedules keep apart by their keys and leave nothing pending), and direct clients
 * that see the truth without faults. Its schedules run one after the other.
 */
export interface OutboxWorld {
  readonly dynamodbProxy: FaultProxy;
  readonly sqsProxy: FaultProxy;
  readonly layout: OutboxLayout;
  readonly dynamodb: DynamoDBClient;
  readonly sqs: SQSClient;
  close(): Promise<void>;
}

let worlds = 0;

export async function openOutboxWorld(emulators: Emulators): Promise<OutboxWorld> {
  const [dynamodbProxy, sqsProxy] = await Promise.all([
    startFaultProxy({ service: 'dynamodb', upstream: emulators.dynamodb }),
    startFaultProxy({ service: 'sqs', upstream: emulators.sqs }),
  ]);
  const dynamodb = new DynamoDBClient(localAwsConfig(emulators.dynamodb));
  const sqs = new SQSClient(localAwsConfig(emulators.sqs));
  const layout: OutboxLayout = {
    tableName: `chaos-outbox-${process.pid}-${++worlds}-${Date.now().toString(36)}`,
    partitionKey: 'pk',
    sortKey: 'sk',
  };
  await createOutboxTable(dynamodb, layout);
  return {
    dynamodbProxy,
    sqsProxy,
    layout,
    dynamodb,
    sqs,
    async close() {
      await Promise.all([dynamodbProxy.close(), sqsProxy.close()]);
      dynamodb.destroy();
      sqs.destroy();
    },
  };
}

/**
 * A table shaped as the OncelyOutbox construct declares its own: string pk/sk, the sparse pending
 * index, and with `stream` its NEW_IMAGE stream (for a relay run from DynamoDB Local's stream).
 */
export async function createOutboxTable(
  client: DynamoDBClient,
  layout: OutboxLayout,
  options: { stream?: boolean } = {},
): Promise<{ tableArn: string; streamArn?: string }> {
  const { TableDescription } = await client.send(
    new CreateTableCommand({
      TableName: layout.tableName,
      AttributeDefinitions: [
        { AttributeName: layout.partitionKey, AttributeType: 'S' },
        { AttributeName: layout.sortKey, AttributeType: 'S' },
        { AttributeName: A.pending, AttributeType: 'S' },
        { AttributeName: A.pendingSince, AttributeType: 'S' },
      ],
      KeySchema: [
        { AttributeName: layout.partitionKey, KeyType: 'HASH' },
        { AttributeName: layout.sortKey, KeyType: 'RANGE' },
      ],
      GlobalSecondaryIndexes: [
        {
          IndexName: OUTBOX_PENDING_INDEX,
          KeySchema: [
            { AttributeName: A.pending, KeyType: 'HASH' },
            { AttributeName: A.pendingSince, KeyType: 'RANGE' },
          ],
          Projection: { ProjectionType: 'INCLUDE', NonKeyAttributes: [A.key, A.groupId] },
        },
      ],
      BillingMode: 'PAY_PER_REQUEST',
      ...(options.stream && { StreamSpecification: { StreamEnabled: true, StreamViewType: 'NEW_IMAGE' } }),
    }),
  );
  return { tableArn: String(TableDescription?.TableArn), streamArn: TableDescription?.LatestStreamArn };
}
