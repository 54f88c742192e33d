import type { DynamoDBClient } from '@aws-sdk/client-dynamodb';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import {
  DynamoDBIdempotencyStore,
  IdempotencyConfigurationError,
  IdempotencyConflictError,
  ResultTooLargeError,
  TransactionalIdempotency,
  TransactionConditionFailedError,
  TransactionContentionError,
  type TransactionWrite,
} from '../../lambdas/idempotency/index.js';
import { countRequests } from '../../sandbox/request-counter.js';
import { createTable, localDynamoClient, readItem } from '../support/dynamodb.js';

let client: DynamoDBClient;
let idempotencyTable: string;
let accounts: string;
let requests: ReturnType<typeof countRequests>;
let ledger: TransactionalIdempotency;

beforeEach(async () => {
  client = localDynamoClient();
  idempotencyTable = await createTable(client, 'idem');
  accounts = await createTable(client, 'accounts');
  const store = new DynamoDBIdempotencyStore({ client, tableName: idempotencyTable });
  ledger = new TransactionalIdempotency({ store, namespace: 'ledger', cache: false });
  requests = countRequests(client);
});

afterEach(() => {
  expect(requests.counts.GetItem ?? 0).toBe(0);
  client.destroy();
});

/** Moves `amount` into an account; a debit must not take the balance below zero. */
function credit(account: string, amount: number): TransactionWrite {
  return {
    Update: {
      TableName: accounts,
      Key: { id: account },
      UpdateExpression: 'ADD balance :amount',
      ...(amount < 0
        ? {
            ConditionExpression: 'balance >= :needed',
            ExpressionAttributeValues: { ':amount': amount, ':needed': -amount },
          }
        : { ExpressionAttributeValues: { ':amount': amount } }),
    },
  };
}

async function balance(account: string): Promise<number | undefined> {
  return (await readItem<{ balance: number }>(accounts, account))?.balance;
}

describe('transactional mode', () => {
  it('commits the writes and the record in one TransactWriteItems; a duplicate applies nothing', async () => {
    const plan = () => ({ writes: [credit('alice', 25)], result: { applied: 25 } });

    expect(await ledger.run({ key: 'e1', payload: { amount: 25 } }, plan)).toEqual({
      status: 'executed',
      result: { applied: 25 },
    });
    expect(requests.counts).toEqual({ TransactWriteItems: 1 });
    expect(await readItem(idempotencyTable, 'ledger#e1')).toMatchObject({ status: 'COMPLETED' });

    requests.reset();
    expect(await ledger.run({ key: 'e1', payload: { amount: 25 } }, plan)).toEqual({
      status: 'duplicate',
      result: { applied: 25 },
      fromCache: false,
    });
    expect(requests.counts).toEqual({ TransactWriteItems: 1 });
    expect(await balance('alice')).toBe(25);
  });

  it('answers duplicates from the cache without planning or sending anything', async () => {
    const cached = new TransactionalIdempotency({
      store: new DynamoDBIdempotencyStore({ client, tableName: idempotencyTable }),
      namespace: 'ledger',
    });
    let plans = 0;
    const plan = () => {
      plans++;
      return { writes: [credit('alice', 5)] };
    };
    await cached.run({ key: 'e1', payload: 5 }, plan);
    requests.reset();
    expect(await cached.run({ key: 'e1', payload: 5 }, plan)).toMatchObject({
      status: 'duplicate',
      fromCache: true,
    });
    expect(requests.total()).toBe(0);
    expect(plans).toBe(1);
  });

  it('commits the business writes once for concurrent duplicates', async () => {
    const outcomes = await Promise.allSettled(
      Array.from({ length: 10 }, () =>
        ledger.run({ key: 'e1', payload: { amount: 5 } }, () => ({ writes: [credit('bob', 5)] })),
      ),
    );
    expect(await balance('bob')).toBe(5);
    const executed = outcomes.filter((o) => o.status === 'fulfilled' && o.value.status === 'executed');
    expect(executed).toHaveLength(1);
    for (const outcome of outcomes) {
      if (outcome.status === 'rejected') expect(outcome.reason).toBeInstanceOf(TransactionContentionError);
    }
  });

  it('reports a failing business condition as that, not as a duplicate, and applies nothing', async () => {
    await ledger.run({ key: 'deposit', payload: 10 }, () => ({ writes: [credit('carol', 10)] }));
    const overdraw = ledger.run({ key: 'withdraw', payload: -50 }, () => ({
      writes: [credit('dave', 50), credit('carol', -50)],
    }));
    await expect(overdraw).rejects.toThrow(TransactionConditionFailedError);
    await expect(overdraw).rejects.toMatchObject({
      failures: [{ index: 1, code: 'ConditionalCheckFailed' }],
    });
    expect(await balance('carol')).toBe(10);
    expect(await balance('dave')).toBeUndefined();
    // Nothing was recorded, so a corrected retry of the same key is not mistaken for a duplicate.
    expect(await readItem(idempotencyTable, 'ledger#withdraw')).toBeUndefined();
  });

  it('detects a conflicting payload under the same key', async () => {
    await ledger.run({ key: 'e1', payload: 1 }, () => ({ writes: [credit('erin', 1)] }));
    await expect(
      ledger.run({ key: 'e1', payload: 2 }, () => ({ writes: [credit('erin', 2)] })),
    ).rejects.toThrow(IdempotencyConflictError);
    expect(await balance('erin')).toBe(1);
  });

  it('refuses plans that cannot commit before sending anything', async () => {
    const tooMany = Array.from({ length: 100 }, (_, i) => credit(`acct-${i}`, 1));
    await expect(ledger.run({ key: 'big', payload: 1 }, () => ({ writes: tooMany }))).rejects.toThrow(
      IdempotencyConfigurationError,
    );
    await expect(
      ledger.run({ key: 'huge', payload: 1 }, () => ({
        writes: [credit('x', 1)],
        result: 'x'.repeat(400_000),
      })),
    ).rejects.toThrow(ResultTooLargeError);
    expect(requests.total()).toBe(0);
  });
});
