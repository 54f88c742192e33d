import { CreateTableCommand, type DynamoDBClient, UpdateTimeToLiveCommand } from '@aws-sdk/client-dynamodb';
import { EXPIRES_AT_ATTRIBUTE, ID_ATTRIBUTE } from '../lambdas/runtime/idempotency';

/** Creates an on-demand table keyed by a string `id`, the schema of the idempotency table (TTL on). */
export async function createIdempotencyTable(client: DynamoDBClient, name: string): Promise<void> {
  await createKeyedTable(client, name);
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
