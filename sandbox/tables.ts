import { CreateTableCommand, type DynamoDBClient, UpdateTimeToLiveCommand } from '@aws-sdk/client-dynamodb';
import {
  EXPIRES_AT_ATTRIBUTE,
  ID_ATTRIBUTE,
  UNRESOLVED_ATTRIBUTE,
  UNRESOLVED_INDEX_NAME,
  UPDATED_AT_ATTRIBUTE,
} from '../lambdas/idempotency/record.js';

/**
 * Creates an on-demand table with the idempotency table's schema, as the construct declares it:
 * keyed by a string `id`, TTL on, and the sparse index of unresolved records.
 */
export async function createIdempotencyTable(client: DynamoDBClient, name: string): Promise<void> {
  await client.send(
    new CreateTableCommand({
      TableName: name,
      AttributeDefinitions: [
        { AttributeName: ID_ATTRIBUTE, AttributeType: 'S' },
        { AttributeName: UNRESOLVED_ATTRIBUTE, AttributeType: 'S' },
        { AttributeName: UPDATED_AT_ATTRIBUTE, AttributeType: 'N' },
      ],
      KeySchema: [{ AttributeName: ID_ATTRIBUTE, KeyType: 'HASH' }],
      GlobalSecondaryIndexes: [
        {
          IndexName: UNRESOLVED_INDEX_NAME,
          KeySchema: [
            { AttributeName: UNRESOLVED_ATTRIBUTE, KeyType: 'HASH' },
            { AttributeName: UPDATED_AT_ATTRIBUTE, KeyType: 'RANGE' },
          ],
          Projection: { ProjectionType: 'ALL' },
        },
      ],
      BillingMode: 'PAY_PER_REQUEST',
    }),
  );
  await client.send(
    new UpdateTimeToLiveCommand({
      TableName: name,
      TimeToLiveSpecification: { AttributeName: EXPIRES_AT_ATTRIBUTE, Enabled: true },
    }),
  );
}

/** Creates an on-demand table keyed by a string `id`. */
export async function createKeyedTable(client: DynamoDBClient, name: string): Promise<void> {
  await client.send(
    new CreateTableCommand({
      TableName: name,
      AttributeDefinitions: [{ AttributeName: ID_ATTRIBUTE, AttributeType: 'S' }],
      KeySchema: [{ AttributeName: ID_ATTRIBUTE, KeyType: 'HASH' }],
      BillingMode: 'PAY_PER_REQUEST',
    }),
  );
}
