import { DynamoDBIdempotencyStore } from '../../lambdas/idempotency/index.js';
import { countRequests } from '../../sandbox/request-counter.js';
import { createTable, localDynamoClient, readItem } from '../support/dynamodb.js';
import type { StoreHarness } from './lease-contract.js';

/** The contracts' DynamoDB store: a fresh table (named after `prefix`) on DynamoDB Local, its requests counted. */
export async function dynamoDbHarness(prefix: string): Promise<StoreHarness> {
  const client = localDynamoClient();
  const table = await createTable(client, prefix);
  const requests = countRequests(client);
  return {
    store: (options) => new DynamoDBIdempotencyStore({ client, tableName: table, ...options }),
    read: (id) => readItem(table, id),
    roundTrips: () => requests.total(),
    resetRoundTrips: () => requests.reset(),
    reads: () => requests.counts.GetItem ?? 0,
    close: () => client.destroy(),
  };
}
