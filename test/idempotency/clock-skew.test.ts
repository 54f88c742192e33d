import { DynamoDBIdempotencyStore } from '../../lambdas/idempotency/index.js';
import { createTable, localDynamoClient, readItem } from '../support/dynamodb.js';
import { clockSkewContract } from './clock-skew-contract.js';

// The clock-skew contract (clock-skew-contract.ts) against DynamoDB Local; valkey-store.test.ts
// runs it on redis-server.

clockSkewContract('DynamoDB', async () => {
  const client = localDynamoClient();
  const table = await createTable(client, 'skew');
  return {
    store: (options) => new DynamoDBIdempotencyStore({ client, tableName: table, ...options }),
    read: (id) => readItem(table, id),
    roundTrips: () => 0,
    resetRoundTrips: () => undefined,
    reads: () => 0,
    close: () => client.destroy(),
  };
});
