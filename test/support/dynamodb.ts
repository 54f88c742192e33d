import { randomUUID } from 'node:crypto';
import { DynamoDBClient } from '@aws-sdk/client-dynamodb';
import { DynamoDBDocumentClient, GetCommand } from '@aws-sdk/lib-dynamodb';

import type { IdempotencyRecord } from '../../lambdas/idempotency/record.js';
import { localAwsConfig } from '../../sandbox/local-aws-config.js';
import { createIdempotencyTable } from '../../sandbox/tables.js';
import { emulatorEndpoint } from './emulator-endpoint.js';

/** A client for the run's DynamoDB Local. Each test that counts requests uses its own. */
export function localDynamoClient(): DynamoDBClient {
  return new DynamoDBClient(localAwsConfig(emulatorEndpoint('dynamodbEndpoint')));
}

export function uniqueName(prefix: string): string {
  return `${prefix}-${randomUUID().slice(0, 8)}`;
}

/** A fresh table with the idempotency table's schema (a string `id`); business tables use it too. */
export async function createTable(client: DynamoDBClient, prefix: string): Promise<string> {
  const name = uniqueName(prefix);
  await createIdempotencyTable(client, name);
  return name;
}

/** Reads an item for an assertion, through a client of its own so it never shows in request counts. */
export async function readItem<T = IdempotencyRecord>(table: string, id: string): Promise<T | undefined> {
  const client = DynamoDBDocumentClient.from(localDynamoClient());
  try {
    const { Item } = await client.send(
      new GetCommand({ TableName: table, Key: { id }, ConsistentRead: true }),
    );
    return Item as T | undefined;
  } finally {
    client.destroy();
  }
}
