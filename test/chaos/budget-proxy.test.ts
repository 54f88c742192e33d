import { randomUUID } from 'node:crypto';
import {
  DeleteItemCommand,
  type DynamoDBClient,
  ProvisionedThroughputExceededException,
  PutItemCommand,
  ThrottlingException,
  TransactionCanceledException,
  TransactWriteItemsCommand,
  UpdateItemCommand,
} from '@aws-sdk/client-dynamodb';
import { DynamoDBDocumentClient, GetCommand } from '@aws-sdk/lib-dynamodb';
import type { RetryStrategyV2 } from '@smithy/types';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { dynamoDbClientVia } from '../../chaos/sdk-clients.js';
import { type BudgetProxy, type BudgetProxyOptions, startBudgetProxy } from '../../harness/budget-proxy.js';
import {
  type Item,
  type ItemWrite,
  type TableSchema,
  updatedImage,
  writeUnits,
} from '../../harness/write-units.js';
import { OUTBOX_PENDING_INDEX, type OutboxLayout } from '../../lambdas/outbox/layout.js';
import { localDynamoClient } from '../support/dynamodb.js';
import { emulatorEndpoint } from '../support/emulator-endpoint.js';
import { createOutboxTable } from '../support/outbox.js';
import { recordRetryDecisions } from './retry-decisions.js';

const BUDGET = 10;

/** The outbox table's shape: pk/sk, and the sparse index on outboxPending/outboxOrder projecting two attributes. */
const SCHEMA: TableSchema = {
  name: 'T',
  arn: 'arn:T',
  partitionKey: 'pk',
  sortKey: 'sk',
  indexes: [
    {
      name: 'I',
      arn: 'arn:T/index/I',
      partitionKey: 'outboxPending',
      sortKey: 'outboxOrder',
      projection: 'INCLUDE',
      include: ['outboxKey', 'groupId'],
    },
  ],
};

const marker = (group: string, order: string): Item => ({
  pk: { S: `oncely-outbox-group#${group}` },
  sk: { S: order },
  outboxPending: { S: 'PENDING' },
  outboxOrder: { S: order },
  outboxKey: { S: `key-${order}` },
  groupId: { S: group },
});

describe('write units, counted as DynamoDB bills them', () => {
  /** The units of a write whose item has an image (its key is then the image's). */
  const on = (write: Omit<ItemWrite, 'key'>) =>
    writeUnits({ ...write, key: {} }).map(({ index, value, units }) => ({ index, value, units }));

  it('a put: 1 unit per KB of the item, rounded up, on its partition-key value; twice in a transaction', () => {
    const small: Item = { pk: { S: 'a' }, sk: { S: 'b' } };
    const large: Item = { pk: { S: 'a' }, sk: { S: 'b' }, body: { S: 'x'.repeat(2_500) } };

    expect(on({ schema: SCHEMA, before: undefined, after: small, transactional: false })).toEqual([
      { index: undefined, value: 'a', units: 1 },
    ]);
    // 2 + 2 + 4 + 2,500 bytes: 3 KB.
    expect(on({ schema: SCHEMA, before: undefined, after: large, transactional: false })).toEqual([
      { index: undefined, value: 'a', units: 3 },
    ]);
    expect(on({ schema: SCHEMA, before: undefined, after: large, transactional: true })).toEqual([
      { index: undefined, value: 'a', units: 6 },
    ]);
  });

  it("a pending marker's put is one write of its entry on the index's key; its delete another; twice the table's in a transaction", () => {
    const item = marker('g1', '001');

    expect(on({ schema: SCHEMA, before: undefined, after: item, transactional: true })).toEqual([
      { index: undefined, value: 'oncely-outbox-group#g1', units: 2 },
      { index: 'I', value: 'PENDING', units: 1 },
    ]);
    expect(on({ schema: SCHEMA, before: item, after: undefined, transactional: true })).toEqual([
      { index: undefined, value: 'oncely-outbox-group#g1', units: 2 },
      { index: 'I', value: 'PENDING', units: 1 },
    ]);
  });

  it('an item without the index key (an outbox item, its claim) costs the index nothing; a key change costs it two writes', () => {
    const outboxItem: Item = {
      pk: { S: 'oncely-outbox#k' },
      sk: { S: 'oncely-outbox' },
      outboxOrder: { S: '1' },
    };
    const claim = updatedImage(
      outboxItem,
      { pk: outboxItem.pk ?? {}, sk: outboxItem.sk ?? {} },
      {
        UpdateExpression: 'SET #owner = :owner, #claimExpiresAt = :expires',
        ExpressionAttributeNames: { '#owner': 'claimOwner', '#claimExpiresAt': 'claimExpiresAt' },
        ExpressionAttributeValues: { ':owner': { S: 'relay:1' }, ':expires': { N: '1700000000000' } },
      },
    );
    expect(claim.claimOwner).toEqual({ S: 'relay:1' });
    expect(on({ schema: SCHEMA, before: outboxItem, after: claim, transactional: false })).toEqual([
      { index: undefined, value: 'oncely-outbox#k', units: 1 },
    ]);

    const moved = updatedImage(
      marker('g1', '001'),
      {},
      {
        UpdateExpression: 'SET outboxPending = :shard REMOVE groupId',
        ExpressionAttributeValues: { ':shard': { S: 'PENDING#3' } },
      },
    );
    expect(moved.groupId).toBeUndefined();
    expect(on({ schema: SCHEMA, before: marker('g1', '001'), after: moved, transactional: false })).toEqual([
      { index: undefined, value: 'oncely-outbox-group#g1', units: 1 },
      { index: 'I', value: 'PENDING', units: 1 },
      { index: 'I', value: 'PENDING#3', units: 1 },
    ]);
  });
});

describe('budget proxy in front of DynamoDB Local, with the real SDK', () => {
  const direct = localDynamoClient();
  let layout: OutboxLayout;
  let proxy: BudgetProxy | undefined;
  const clients: DynamoDBClient[] = [];
  /** The proxy's clock: each test moves it by hand, so a "second" is exact whatever the machine's load. */
  let clock = 1_000_000;

  beforeAll(async () => {
    layout = await createOutboxTable(direct, 'budget');
  });
  afterAll(() => direct.destroy());
  afterEach(async () => {
    for (const client of clients.splice(0)) client.destroy();
    await proxy?.close();
    proxy = undefined;
  });

  const start = async (options: Partial<BudgetProxyOptions> = {}) => {
    proxy = await startBudgetProxy({
      upstream: emulatorEndpoint('dynamodbEndpoint'),
      unitsPerSecond: BUDGET,
      now: () => clock,
      ...options,
    });
    return proxy;
  };
  /** A client through the proxy; `attempts` 1 shows each throttle to the caller. */
  const via = (target: BudgetProxy, attempts = 1) => {
    const client = dynamoDbClientVia(target, attempts);
    clients.push(client);
    return client;
  };

  const put = (client: DynamoDBClient, item: Item) =>
    client.send(new PutItemCommand({ TableName: layout.tableName, Item: item as never }));
  const plainItem = (pk: string): Item => ({ pk: { S: pk }, sk: { S: randomUUID() } });
  const read = async (key: Record<string, string>) => {
    const documents = DynamoDBDocumentClient.from(direct);
    const { Item } = await documents.send(
      new GetCommand({ TableName: layout.tableName, Key: key, ConsistentRead: true }),
    );
    return Item;
  };
  /** Sends `count` one-unit puts to partition `pk`, one after another; how many went through. */
  const fill = async (client: DynamoDBClient, pk: string, count: number) => {
    let passed = 0;
    for (let i = 0; i < count; i++) {
      const ok = await put(client, plainItem(pk)).then(
        () => true,
        (error: unknown) => {
          if (!(error instanceof ProvisionedThroughputExceededException)) throw error;
          return false;
        },
      );
      if (ok) passed++;
    }
    return passed;
  };

  it('one hot key is held to its budget per second; n keys carry n times it', async () => {
    const target = await start();
    const client = via(target);
    const hot = `hot-${randomUUID()}`;
    const keys = [1, 2, 3, 4].map((n) => `key${n}-${randomUUID()}`);

    // Three seconds of 15 writes a second on one key: 10 a second go through.
    const hotPassed: number[] = [];
    for (let second = 0; second < 3; second++) {
      hotPassed.push(await fill(client, hot, 15));
      clock += 1_000;
    }
    expect(hotPassed).toEqual([BUDGET, BUDGET, BUDGET]);
    expect(target.unitsOn(layout.tableName, hot)).toBe(3 * BUDGET);

    // The same 15 a second on each of 4 keys: 4 × 10 a second.
    const spreadPassed: number[] = [];
    for (let second = 0; second < 3; second++) {
      const passed = await Promise.all(keys.map((key) => fill(client, key, 15)));
      spreadPassed.push(passed.reduce((sum, n) => sum + n, 0));
      clock += 1_000;
    }
    expect(spreadPassed).toEqual([4 * BUDGET, 4 * BUDGET, 4 * BUDGET]);
    expect(keys.map((key) => target.unitsOn(layout.tableName, key))).toEqual(keys.map(() => 3 * BUDGET));
    expect(target.stats()).toMatchObject({ passed: 3 * BUDGET + 12 * BUDGET, throttled: 3 * 5 + 12 * 5 });
  });

  it('a key refills at its budget a second, never above one second’s worth', async () => {
    const target = await start();
    const client = via(target);
    const key = `refill-${randomUUID()}`;

    expect(await fill(client, key, 6)).toBe(6);
    clock += 300; // 4 left, 3 more refilled
    expect(await fill(client, key, 10)).toBe(7);
    clock += 5_000; // idle: back to one second's worth, no more
    expect(await fill(client, key, 15)).toBe(BUDGET);
  });

  it('a key with room left admits a request of more units than remain, then nothing until it has paid the overshoot back', async () => {
    const target = await start();
    const client = via(target);
    const key = `large-${randomUUID()}`;
    const transaction = (items: number) =>
      client.send(
        new TransactWriteItemsCommand({
          TransactItems: Array.from({ length: items }, () => ({
            Put: { TableName: layout.tableName, Item: plainItem(key) as never },
          })),
        }),
      );

    // One-unit writes leave 1 unit: a 12-unit transaction (6 items) still goes — a relay's SENT
    // mark is not starved by producers' writes that always fit what is left. It owes 11.
    expect(await fill(client, key, BUDGET - 1)).toBe(BUDGET - 1);
    await transaction(6);
    expect(target.unitsOn(layout.tableName, key)).toBe(BUDGET - 1 + 12);
    expect(await fill(client, key, 3)).toBe(0);
    clock += 1_000; // 10 refilled: still 1 owed
    expect(await fill(client, key, 3)).toBe(0);
    clock += 300; // 3 refilled: 2 left
    expect(await fill(client, key, 3)).toBe(2);
  });

  it('answers ProvisionedThroughputExceededException as DynamoDB does: the SDK parses its reasons and retries it as throttling', async () => {
    const target = await start();
    const key = `retry-${randomUUID()}`;
    expect(await fill(via(target), key, BUDGET)).toBe(BUDGET);

    const once = via(target);
    const refused = plainItem(key);
    const error = await put(once, refused).catch((caught: unknown) => caught);
    expect(error).toBeInstanceOf(ProvisionedThroughputExceededException);
    expect(error).toMatchObject({
      $metadata: { httpStatusCode: 400, attempts: 1 },
      ThrottlingReasons: [
        {
          reason: 'TableWriteKeyRangeThroughputExceeded',
          resource: expect.stringContaining(layout.tableName),
        },
      ],
    });
    expect(await read({ pk: key, sk: String(refused.sk?.S) })).toBeUndefined();

    // With retries: the SDK waits and tries again; once the second has passed, the write goes through.
    const retrying = via(target, 3);
    const decisions = await recordRetryDecisions(retrying);
    const strategy = (await retrying.config.retryStrategy()) as RetryStrategyV2;
    const refresh = strategy.refreshRetryTokenForRetry.bind(strategy);
    strategy.refreshRetryTokenForRetry = (token, info) => {
      clock += 1_000;
      return refresh(token, info);
    };
    const output = await put(retrying, plainItem(key));
    expect(output.$metadata.attempts).toBe(2);
    expect(decisions).toEqual(['THROTTLING']);
  });

  it('or ThrottlingException, with its reasons, also retried as throttling', async () => {
    const target = await start({ exception: 'ThrottlingException' });
    const key = `throttling-${randomUUID()}`;
    const client = via(target);
    const decisions = await recordRetryDecisions(client);
    expect(await fill(client, key, BUDGET)).toBe(BUDGET);

    const error = await put(client, plainItem(key)).catch((caught: unknown) => caught);

    expect(error).toBeInstanceOf(ThrottlingException);
    expect((error as ThrottlingException).throttlingReasons).toEqual([
      { reason: 'TableWriteKeyRangeThroughputExceeded', resource: expect.stringContaining(layout.tableName) },
    ]);
    expect(decisions).toEqual(['THROTTLING']);
  });

  it("counts the index's key: markers of many groups (many table keys) share the index's one PENDING key and its budget", async () => {
    const target = await start();
    const client = via(target);
    const shard = `PENDING-${randomUUID()}`;
    const markerOf = (group: string) => ({
      ...marker(group, `${Date.now()}#${randomUUID()}`),
      outboxPending: { S: shard },
    });

    const results = await Promise.allSettled(
      Array.from({ length: 15 }, (_, i) => put(client, markerOf(`group-${i}-${randomUUID()}`))),
    );

    expect(results.filter((result) => result.status === 'fulfilled')).toHaveLength(BUDGET);
    const refused = results.flatMap((result) => (result.status === 'rejected' ? [result.reason] : []));
    expect(refused).toHaveLength(5);
    expect(refused[0]).toMatchObject({
      name: 'ProvisionedThroughputExceededException',
      ThrottlingReasons: [
        {
          reason: 'IndexWriteKeyRangeThroughputExceeded',
          resource: expect.stringContaining(OUTBOX_PENDING_INDEX),
        },
      ],
    });
    expect(target.unitsOn(layout.tableName, shard, OUTBOX_PENDING_INDEX)).toBe(BUDGET);
    // An item without the index's key (an outbox item) still goes through: its own partition has room.
    await expect(put(client, plainItem(`oncely-outbox#${randomUUID()}`))).resolves.toBeDefined();
  });

  it('a transaction that touches the hot index key is canceled as DynamoDB cancels it (ThrottlingError), which the SDK does not retry', async () => {
    const target = await start();
    const shard = `PENDING-${randomUUID()}`;
    const group = `group-${randomUUID()}`;
    const order = `${Date.now()}#000#k`;
    const pending = { ...marker(group, order), outboxPending: { S: shard } };
    const pendingKey = { pk: { S: `oncely-outbox-group#${group}` }, sk: { S: order } };
    await direct.send(new PutItemCommand({ TableName: layout.tableName, Item: pending as never }));
    const client = via(target, 3);
    const decisions = await recordRetryDecisions(client);
    // Fill the shard's budget with other groups' markers.
    for (let i = 0; i < BUDGET; i++) {
      await put(client, { ...marker(`other-${i}-${randomUUID()}`, `${i}`), outboxPending: { S: shard } });
    }

    // A SENT mark: the outbox item's update and the marker's delete; the delete writes the index.
    const itemKey = { pk: { S: `oncely-outbox#${randomUUID()}` }, sk: { S: 'oncely-outbox' } };
    const sentMark = new TransactWriteItemsCommand({
      TransactItems: [
        {
          Update: {
            TableName: layout.tableName,
            Key: itemKey,
            UpdateExpression: 'SET outboxStatus = :sent',
            ExpressionAttributeValues: { ':sent': { S: 'SENT' } },
          },
        },
        { Delete: { TableName: layout.tableName, Key: pendingKey } },
      ],
    });
    const error = await client.send(sentMark).catch((caught: unknown) => caught);

    expect(error).toBeInstanceOf(TransactionCanceledException);
    expect((error as TransactionCanceledException).CancellationReasons).toEqual([
      { Code: 'None' },
      { Code: 'ThrottlingError', Message: expect.stringContaining('global secondary indexes') },
    ]);
    expect(error).toMatchObject({ $metadata: { attempts: 1 } });
    expect(decisions).toEqual(['CLIENT_ERROR']);
    // Nothing of it was applied.
    expect(await read({ pk: `oncely-outbox-group#${group}`, sk: order })).toBeDefined();
    expect(await read({ pk: String(itemKey.pk.S), sk: 'oncely-outbox' })).toBeUndefined();

    // `transactions: 'exception'`: the same transaction meets a throttling exception, which the SDK retries.
    await proxy?.close();
    const second = await start({ transactions: 'exception' });
    const fresh = via(second, 2);
    const retried = await recordRetryDecisions(fresh);
    for (let i = 0; i < BUDGET; i++) {
      await put(fresh, { ...marker(`more-${i}-${randomUUID()}`, `${i}`), outboxPending: { S: shard } });
    }
    const thrown = await fresh.send(sentMark).catch((caught: unknown) => caught);
    expect(thrown).toBeInstanceOf(ProvisionedThroughputExceededException);
    expect(thrown).toMatchObject({ $metadata: { attempts: 2 } });
    expect(retried[0]).toBe('THROTTLING');
  });

  it("counts an item's size: a 2.5 KB put takes 3 units, in a transaction 6; an update of it 3 whatever it changes", async () => {
    const target = await start({ unitsPerSecond: 100 });
    const client = via(target);
    const key = `sized-${randomUUID()}`;
    const large: Item = { pk: { S: key }, sk: { S: 'a' }, body: { S: 'x'.repeat(2_500) } };

    await put(client, large);
    expect(target.unitsOn(layout.tableName, key)).toBe(3);
    await client.send(
      new TransactWriteItemsCommand({
        TransactItems: [
          { Put: { TableName: layout.tableName, Item: { ...large, sk: { S: 'b' } } as never } },
        ],
      }),
    );
    expect(target.unitsOn(layout.tableName, key)).toBe(3 + 6);
    await client.send(
      new UpdateItemCommand({
        TableName: layout.tableName,
        Key: { pk: { S: key }, sk: { S: 'a' } },
        UpdateExpression: 'SET flag = :on',
        ExpressionAttributeValues: { ':on': { BOOL: true } },
      }),
    );
    expect(target.unitsOn(layout.tableName, key)).toBe(3 + 6 + 3);
  });

  it('counts what AWS bills (issue 40): a delete of an absent item 1 unit, a ConditionCheck its item like a write', async () => {
    const target = await start({ unitsPerSecond: 100 });
    const client = via(target);
    const key = `billed-${randomUUID()}`;
    const large: Item = { pk: { S: key }, sk: { S: 'a' }, body: { S: 'x'.repeat(2_500) } };
    await put(client, large); // 3 units

    await client.send(
      new DeleteItemCommand({ TableName: layout.tableName, Key: { pk: { S: key }, sk: { S: 'absent' } } }),
    );
    expect(target.unitsOn(layout.tableName, key)).toBe(3 + 1);
    await client.send(
      new TransactWriteItemsCommand({
        TransactItems: [
          {
            ConditionCheck: {
              TableName: layout.tableName,
              Key: { pk: { S: key }, sk: { S: 'a' } },
              ConditionExpression: 'attribute_exists(pk)',
            },
          },
          { Delete: { TableName: layout.tableName, Key: { pk: { S: key }, sk: { S: 'absent-too' } } } },
        ],
      }),
    );
    // The check of the 2.5 KB item: 3 units, twice in a transaction; the absent item's delete 1, twice.
    expect(target.unitsOn(layout.tableName, key)).toBe(3 + 1 + 6 + 2);
  });

  it('holds a key to its budget over time (issue 40): what a large request takes past it is owed, not forgotten', async () => {
    const target = await start();
    const client = via(target);
    const key = `held-${randomUUID()}`;
    const sentMarkLike = () =>
      client
        .send(
          new TransactWriteItemsCommand({
            TransactItems: Array.from({ length: 6 }, () => ({
              Put: { TableName: layout.tableName, Item: plainItem(key) as never },
            })),
          }),
        )
        .catch((error: unknown) => {
          if (!(error instanceof TransactionCanceledException)) throw error;
        });

    // Ten seconds: every 100 ms two one-unit writes and a 12-unit transaction, each as it comes.
    const seconds = 10;
    for (let tick = 0; tick < seconds * 10; tick++) {
      await fill(client, key, 2);
      await sentMarkLike();
      clock += 100;
    }

    // Its budget a second, plus one second's start and one request's overshoot: never twice it.
    const taken = target.unitsOn(layout.tableName, key);
    expect(taken).toBeLessThanOrEqual(BUDGET * seconds + BUDGET + 12);
    expect(taken).toBeGreaterThanOrEqual(BUDGET * seconds - 12);
  });
});
