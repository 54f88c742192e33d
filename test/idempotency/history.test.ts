import type { DynamoDBClient } from '@aws-sdk/client-dynamodb';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import {
  DynamoDBIdempotencyStore,
  LeaseIdempotency,
  TransactionalIdempotency,
} from '../../lambdas/idempotency/index.js';
import type { IdempotencyRecord } from '../../lambdas/idempotency/record.js';
import { createTable, localDynamoClient, readItem } from '../support/dynamodb.js';
import { loseAnswers, setsStatus } from '../support/sdk-middleware.js';
import { dynamoDbHarness } from './dynamodb-harness.js';
import { delivery, historyContract, statuses } from './history-contract.js';

// DESIGN §3, the history: each write that changes a record's status appends one entry in the same
// request, so `oncely history` tells a message's story without a request of its own. The contract
// (history-contract.ts) on DynamoDB Local, then DynamoDB's own: a transaction's entry, and the
// SDK's retries of writes whose answers were lost.

historyContract('DynamoDB', () => dynamoDbHarness('history'));

describe('DynamoDB: its own history writes', () => {
  let client: DynamoDBClient;
  let table: string;
  let now: number;
  let store: DynamoDBIdempotencyStore;

  beforeEach(async () => {
    client = localDynamoClient();
    table = await createTable(client, 'history');
    now = Date.now();
    store = new DynamoDBIdempotencyStore({ client, tableName: table, now: () => now, ttlSeconds: 3600 });
  });

  afterEach(() => client.destroy());

  const lease = (mode: 'at-least-once' | 'at-most-once' = 'at-least-once') =>
    new LeaseIdempotency({ store, namespace: 'mail', mode, leaseMs: 60_000, cache: false });
  const historyOf = async (id: string) => (await readItem<IdempotencyRecord>(table, id))?.history ?? [];

  describe('DynamoDB: a transaction', () => {
    it('a transaction commits its record with one entry, for the delivery that committed it', async () => {
      const ledger = new TransactionalIdempotency({ store, namespace: 'ledger', cache: false });
      await ledger.run({ key: 't1', payload: 1, delivery: delivery('m-t') }, () => ({ writes: [] }));
      expect(await historyOf('ledger#t1')).toEqual([
        { s: 'COMPLETED', t: now, a: 1, m: 'm-t', r: 1, p: '2026-11-29T10:00:00.000Z' },
      ]);
    });
  });

  describe('faults', () => {
    it('an outcome write applied but its answer lost, retried by the SDK, appends once', async () => {
      const lost = loseAnswers(
        client,
        (operation, input) => operation === 'UpdateItem' && setsStatus(input, 'COMPLETED'),
      );
      const outcome = await lease().run({ key: 'k6', payload: 1 }, () => 'sent');
      expect(lost.lost).toBe(1);
      expect(outcome).toMatchObject({ status: 'executed', recorded: true });
      expect(statuses(await historyOf('mail#k6'))).toEqual(['IN_PROGRESS', 'COMPLETED']);
    });

    it("an acquire's update applied but its answer lost appends once", async () => {
      const mail = lease();
      await expect(
        mail.run({ key: 'k7', payload: 1 }, () => {
          throw new Error('first run fails');
        }),
      ).rejects.toThrow();
      const lost = loseAnswers(
        client,
        (operation, input) =>
          operation === 'UpdateItem' &&
          String(input.UpdateExpression).startsWith('SET #status = :inProgress'),
      );
      await mail.run({ key: 'k7', payload: 1 }, () => 'sent');
      expect(lost.lost).toBe(1);
      expect(statuses(await historyOf('mail#k7'))).toEqual([
        'IN_PROGRESS',
        'FAILED',
        'IN_PROGRESS',
        'COMPLETED',
      ]);
    });
  });
});
