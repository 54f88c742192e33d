import { CreateTableCommand, type DynamoDBClient } from '@aws-sdk/client-dynamodb';
import {
  ID_ATTRIBUTE,
  UNRESOLVED_ATTRIBUTE,
  UNRESOLVED_INDEX_ATTRIBUTES,
  UNRESOLVED_INDEX_NAME,
  UPDATED_AT_ATTRIBUTE,
} from '../lambdas/idempotency/record.js';

/**
 * Creates an on-demand table with the idempotency table's schema, as the construct declares it:
 * keyed by a string `id`, with the sparse index of unresolved records. Its TTL on `expiresAt` is
 * left off, as the sandbox leaves it off: DynamoDB Local would delete an expired record within
 * seconds, where AWS may keep it readable for two days, and the store must treat it as absent itself.
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
          Projection: { ProjectionType: 'INCLUDE', NonKeyAttributes: [...UNRESOLVED_INDEX_ATTRIBUTES] },
        },
      ],
      BillingMode: 'PAY_PER_REQUEST',
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
