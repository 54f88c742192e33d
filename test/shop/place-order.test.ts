import { type DynamoDBClient, ScanCommand } from '@aws-sdk/client-dynamodb';
import type { SQSClient } from '@aws-sdk/client-sqs';
import { unmarshall } from '@aws-sdk/util-dynamodb';
import { Outbox } from 'oncely/outbox';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { sweep } from '../../lambdas/outbox/sweeper.js';
import {
  createPlaceOrderHandler,
  InvalidOrderError,
  OrderAlreadyPlacedError,
  orderPlacedKey,
} from '../../lambdas/shop/orders/place-order.js';
import { localDynamoClient } from '../support/dynamodb.js';
import { createOutboxTable, senderOptions } from '../support/outbox.js';
import { createFifoQueue, deleteQueues, drainQueue, type FifoQueue, localSqsClient } from '../support/sqs.js';

let dynamodb: DynamoDBClient;
let sqs: SQSClient;
let queue: FifoQueue;
let tableName: string;
let placeOrder: ReturnType<typeof createPlaceOrderHandler>;

beforeAll(async () => {
  dynamodb = localDynamoClient();
  sqs = localSqsClient();
  queue = await createFifoQueue(sqs);
  const layout = await createOutboxTable(dynamodb, 'orders');
  tableName = layout.tableName;
  placeOrder = createPlaceOrderHandler({
    outbox: new Outbox({ client: dynamodb, ...layout }),
    ordersTableName: tableName,
  });
});
afterAll(async () => {
  await deleteQueues(sqs, [queue]);
  sqs.destroy();
  dynamodb.destroy();
});

const order = { orderId: 'o-1', customerId: 'customer-1', sku: 'sku-1', quantity: 2, amountCents: 300 };

async function scan() {
  const { Items = [] } = await dynamodb.send(new ScanCommand({ TableName: tableName, ConsistentRead: true }));
  return Items.map((item) => unmarshall(item));
}

describe('PlaceOrder', () => {
  it('writes the order and its OrderPlaced event together; the outbox publishes the event once', async () => {
    expect(await placeOrder(order)).toEqual({ orderId: 'o-1', eventKey: orderPlacedKey('o-1') });
    const items = await scan();
    expect(items.find((item) => item.pk === 'order#o-1')).toMatchObject({
      status: 'PLACED',
      amountCents: 300,
    });

    await sweep({
      ...senderOptions(dynamodb, sqs, { tableName, partitionKey: 'pk', sortKey: 'sk' }, queue.url),
      sweepAfterMs: 0,
      stuckAfterMs: 60_000,
      timeLeftMs: () => 60_000,
    });
    const [received] = await drainQueue(sqs, queue.url, 1);
    expect(received?.envelope).toMatchObject({
      type: 'OrderPlaced',
      groupId: 'customer-1',
      key: 'placed-o-1',
      payload: order,
    });
  });

  it('refuses an order id placed before, and writes and publishes nothing', async () => {
    const before = await scan();
    const error = await placeOrder({ ...order, amountCents: 999 }).catch((caught: unknown) => caught);
    expect(error).toBeInstanceOf(OrderAlreadyPlacedError);
    expect((error as Error).name).toBe('OrderAlreadyPlacedError');
    expect(await scan()).toEqual(before);
  });

  it('refuses what is not an order, naming each problem', async () => {
    const error = await placeOrder({
      orderId: '',
      customerId: 'c',
      sku: 's',
      quantity: 0,
      amountCents: 1,
    }).catch((caught: unknown) => caught);
    expect(error).toBeInstanceOf(InvalidOrderError);
    expect((error as Error).message).toMatch(/orderId: .*; quantity: /);
  });
});
