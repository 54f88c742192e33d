import type { DynamoDBClient } from '@aws-sdk/client-dynamodb';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { DynamoDBIdempotencyStore, LeaseIdempotency } from '../../lambdas/idempotency/index.js';
import { countRequests } from '../../sandbox/request-counter.js';
import { createTable, localDynamoClient, readItem } from '../support/dynamodb.js';
import { failRequests } from '../support/sdk-middleware.js';
import { dynamoDbHarness } from './dynamodb-harness.js';
import { leaseContract, manualClock, recordingObserver } from './lease-contract.js';

// Lease mode on DynamoDB Local: the contract every store keeps (lease-contract.ts), then what is
// DynamoDB's own — which requests each step costs, and the SDK's failures.

leaseContract('DynamoDB', () => dynamoDbHarness('idem'));

describe('DynamoDB: the requests of lease mode', () => {
  let client: DynamoDBClient;
  let table: string;
  let clock: ReturnType<typeof manualClock>;
  let requests: ReturnType<typeof countRequests>;
  let idempotency: LeaseIdempotency;

  beforeEach(async () => {
    client = localDynamoClient();
    table = await createTable(client, 'idem');
    clock = manualClock();
    requests = countRequests(client);
    const store = new DynamoDBIdempotencyStore({
      client,
      tableName: table,
      now: clock.now,
      ttlSeconds: 3600,
    });
    idempotency = new LeaseIdempotency({ store, namespace: 'mail', mode: 'at-least-once', cache: false });
  });

  afterEach(() => client.destroy());

  it('costs a put and an update for a first delivery, and one failed conditional put for a duplicate', async () => {
    await idempotency.run({ key: 'k1', payload: 1 }, async () => 'sent');
    expect(requests.counts).toEqual({ PutItem: 1, UpdateItem: 1 });
    requests.reset();
    expect((await idempotency.run({ key: 'k1', payload: 1 }, async () => 'again')).status).toBe('duplicate');
    expect(requests.counts).toEqual({ PutItem: 1 });
  });

  it('takes a FAILED record in a put that finds it and an update, then completes it', async () => {
    await expect(
      idempotency.run({ key: 'k1', payload: 1 }, async () => {
        throw new Error('gateway 503');
      }),
    ).rejects.toThrow('gateway 503');
    requests.reset();
    await idempotency.run({ key: 'k1', payload: 1 }, async ({ attempt }) => attempt);
    // The put finds the FAILED record; the update takes it, counting the attempt; then the completion.
    expect(requests.counts).toEqual({ PutItem: 1, UpdateItem: 2 });
  });

  it('reports an unrecorded completion when every SDK request of it fails, and leaves the lease to expire', async () => {
    const { events, observer } = recordingObserver();
    const store = new DynamoDBIdempotencyStore({ client, tableName: table, now: clock.now });
    const observed = new LeaseIdempotency({ store, namespace: 'mail', mode: 'at-least-once', observer });
    const outage = failRequests(client, (operation, input) => {
      const values = input.ExpressionAttributeValues as Record<string, { S?: string }> | undefined;
      return operation === 'UpdateItem' && values?.[':status']?.S === 'COMPLETED';
    });
    const outcome = await observed.run({ key: 'k2', payload: 1 }, async () => 'sent');
    expect(outcome).toEqual({ status: 'executed', result: 'sent', recorded: false });
    expect(outage.failures).toBe(3); // retried inside the invocation before giving up
    expect(events).toEqual([{ event: 'completionWriteFailed', id: 'mail#k2' }]);
    expect(await readItem(table, 'mail#k2')).toMatchObject({ status: 'IN_PROGRESS' });
  });
});
