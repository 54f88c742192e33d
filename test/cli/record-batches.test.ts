import { PutItemCommand } from '@aws-sdk/client-dynamodb';
import { marshall } from '@aws-sdk/util-dynamodb';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { recordsInProgress } from '../../cli/record-batches.js';
import { createTable, localDynamoClient } from '../support/dynamodb.js';

// Which of the console's listed messages run now: their records read by key (BatchGetItem) from
// DynamoDB Local, IN_PROGRESS under a lease that has not run out.

const client = localDynamoClient();
let table: string;
const NOW = Date.UTC(2026, 10, 30, 12);

beforeAll(async () => {
  table = await createTable(client, 'in-progress');
});
afterAll(() => client.destroy());

describe('the records in progress', () => {
  it('are those IN_PROGRESS with a live lease, among more than one read of 100', async () => {
    const records = [
      { id: 'ns#running', status: 'IN_PROGRESS', leaseExpiresAt: NOW + 30_000 },
      { id: 'ns#lease-ran-out', status: 'IN_PROGRESS', leaseExpiresAt: NOW - 1 },
      { id: 'ns#done', status: 'COMPLETED' },
      ...Array.from({ length: 120 }, (_, i) => ({
        id: `ns#r${i}`,
        status: 'IN_PROGRESS',
        leaseExpiresAt: NOW + i,
      })),
    ];
    for (const record of records) {
      await client.send(new PutItemCommand({ TableName: table, Item: marshall(record) }));
    }
    const ids = [...records.map((record) => record.id), 'ns#never-written'];
    const running = await recordsInProgress(
      { dynamodb: client, resources: { idempotencyTableName: table } as never },
      ids,
      NOW,
    );
    expect([...running].sort()).toEqual(
      ['ns#running', ...Array.from({ length: 119 }, (_, i) => `ns#r${i + 1}`)].sort(),
    );
    expect(
      await recordsInProgress(
        { dynamodb: client, resources: { idempotencyTableName: table } as never },
        [],
        NOW,
      ),
    ).toEqual(new Set());
  });
});
