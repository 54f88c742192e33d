import { randomUUID } from 'node:crypto';
import type { DynamoDBClient } from '@aws-sdk/client-dynamodb';
import { GetQueueAttributesCommand, type SQSClient } from '@aws-sdk/client-sqs';
import { DynamoDBDocumentClient, paginateScan } from '@aws-sdk/lib-dynamodb';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import type { OutgoingMessage } from '../../lambdas/common/envelope.js';
import { CONSUMER_METRICS, DLQ_ATTRIBUTES } from '../../lambdas/consumer/index.js';
import {
  type AccountItem,
  ledgerItemId,
  type OrderItem,
  type StockItem,
} from '../../lambdas/shop/consumer/ledger.js';
import { localDynamoClient } from '../support/dynamodb.js';
import { failRequests } from '../support/sdk-middleware.js';
import { deleteQueues, type FifoQueue, localSqsClient, publish, receiveMessages } from '../support/sqs.js';
import { pollOnce, pollUntil } from '../support/sqs-event-source.js';
import { exampleConsumer } from './support/example-consumer.js';

// The example consumer's ledger events (transactional mode), end to end: SQS emulator → handler → DynamoDB Local.

let sqs: SQSClient;
const clients: DynamoDBClient[] = [];
const queues: FifoQueue[] = [];

beforeAll(() => {
  sqs = localSqsClient();
});

afterAll(async () => {
  vi.unstubAllEnvs();
  await deleteQueues(sqs, queues);
  sqs.destroy();
  for (const client of clients) client.destroy();
});

async function ledgerConsumer() {
  const dynamodb = localDynamoClient();
  clients.push(dynamodb);
  const consumer = await exampleConsumer({ dynamodb, sqs });
  queues.push(consumer.queue, consumer.dlq);
  return { ...consumer, dynamodb };
}

const SKUS = ['sku-0', 'sku-1', 'sku-2', 'sku-3'];
const INITIAL_STOCK = 1_000;

/**
 * A shop's history: stock for every SKU, then per customer (= message group, so in order) orders
 * placed, and most of them paid or cancelled. Deterministic, so a failure can be replayed.
 */
function shopHistory(customers: number, ordersPerCustomer: number) {
  const stock: OutgoingMessage[] = SKUS.map((sku) => ({
    type: 'StockReceived',
    groupId: 'warehouse',
    key: `stock-${sku}-${randomUUID()}`,
    payload: { sku, quantity: INITIAL_STOCK },
  }));
  const orders: OutgoingMessage[] = [];
  for (let c = 0; c < customers; c++) {
    const customerId = `customer-${c}`;
    const placed = Array.from({ length: ordersPerCustomer }, (_, i) => ({
      orderId: `order-${c}-${i}-${randomUUID().slice(0, 8)}`,
      customerId,
      sku: SKUS[(c + i) % SKUS.length] as string,
      quantity: 1 + (i % 3),
      amountCents: 100 * (1 + ((c * 7 + i) % 9)),
    }));
    const event = (type: string, payload: object) => ({
      type,
      groupId: customerId,
      key: randomUUID(),
      payload,
    });
    orders.push(...placed.map((order) => event('OrderPlaced', order)));
    placed.forEach((order, i) => {
      if (i % 3 === 0)
        orders.push(
          event('PaymentCaptured', { orderId: order.orderId, customerId, amountCents: order.amountCents }),
        );
      if (i % 3 === 1) orders.push(event('OrderCancelled', order));
    });
  }
  return { stock, orders };
}

/**
 * What the ledger must hold once each distinct event applied once, computed without the consumer:
 * stock and balances by their item id, and each order's status.
 */
function expectedLedger(events: OutgoingMessage[]): Record<string, number | string> {
  const ledger: Record<string, number | string> = {};
  const add = (id: string, amount: number) => (ledger[id] = Number(ledger[id] ?? 0) + amount);
  for (const { type, payload } of events) {
    const p = payload as {
      sku: string;
      quantity: number;
      orderId: string;
      customerId: string;
      amountCents: number;
    };
    const order = ledgerItemId.order(p.orderId);
    if (type === 'StockReceived') add(ledgerItemId.stock(p.sku), p.quantity);
    if (type === 'OrderPlaced') {
      add(ledgerItemId.stock(p.sku), -p.quantity);
      add(ledgerItemId.account(p.customerId), -p.amountCents);
      ledger[order] = 'PLACED';
    }
    if (type === 'PaymentCaptured') {
      add(ledgerItemId.account(p.customerId), p.amountCents);
      ledger[order] = 'PAID';
    }
    if (type === 'OrderCancelled') {
      add(ledgerItemId.stock(p.sku), p.quantity);
      add(ledgerItemId.account(p.customerId), p.amountCents);
      ledger[order] = 'CANCELLED';
    }
  }
  return ledger;
}

/** The ledger table in the same shape as `expectedLedger`. */
async function actualLedger(client: DynamoDBClient, table: string): Promise<Record<string, number | string>> {
  const ledger: Record<string, number | string> = {};
  const documents = DynamoDBDocumentClient.from(client);
  for await (const page of paginateScan({ client: documents }, { TableName: table, ConsistentRead: true })) {
    for (const item of (page.Items ?? []) as (StockItem | AccountItem | OrderItem)[]) {
      ledger[item.id] =
        'available' in item ? item.available : 'balanceCents' in item ? item.balanceCents : item.status;
    }
  }
  return ledger;
}

/** Publishes in order, customer after customer; every `duplicateEvery`th event twice. */
async function publishAll(queueUrl: string, messages: OutgoingMessage[], duplicateEvery: number) {
  const ids: string[] = [];
  for (const [index, message] of messages.entries()) {
    ids.push(await publish(sqs, queueUrl, message));
    // The same event again, past SQS's dedup window (a new dedup id): only the consumer can catch it.
    if (index % duplicateEvery === 0) ids.push(await publish(sqs, queueUrl, message, randomUUID()));
  }
  return ids;
}

async function dlqDepth(dlq: FifoQueue): Promise<number> {
  const { Attributes } = await sqs.send(
    new GetQueueAttributesCommand({ QueueUrl: dlq.url, AttributeNames: ['ApproximateNumberOfMessages'] }),
  );
  return Number(Attributes?.ApproximateNumberOfMessages);
}

describe.concurrent('example consumer: ledger events', () => {
  it('applies a few hundred events exactly once through duplicates, redeliveries and failed batches', async () => {
    const consumer = await ledgerConsumer();
    // Every 40th transaction fails as if DynamoDB were unreachable: its whole batch comes back.
    let transactions = 0;
    const outage = failRequests(
      consumer.dynamodb,
      (operation) => operation === 'TransactWriteItems' && ++transactions % 40 === 0,
      () => Object.assign(new Error('socket hang up'), { code: 'ECONNRESET' }),
    );
    const { stock, orders } = shopHistory(10, 12);

    // Two containers poll side by side; every 5th invocation "dies" after its work, deleting nothing.
    const unacknowledged = new Set<string>();
    const stats = { failedBatches: 0, sent: 0 };
    // A bound for a run that fails, per phase: a passing one ends when every message is acknowledged
    // (it took 26 s for both phases on a CI machine busy with the rest of the suite).
    let deadline = 0;
    const container = async (handler: ReturnType<typeof consumer.container>) => {
      for (let invocation = 1; unacknowledged.size > 0 && Date.now() < deadline; invocation++) {
        const poll = await pollOnce(sqs, consumer.queue, handler, { acknowledge: invocation % 5 !== 0 });
        if (poll.error) stats.failedBatches++;
        for (const id of poll.deleted) unacknowledged.delete(id);
      }
    };
    const containers = [consumer.handler, consumer.container()];
    const consume = async (messages: OutgoingMessage[], duplicateEvery: number) => {
      const sent = await publishAll(consumer.queue.url, messages, duplicateEvery);
      stats.sent += sent.length;
      for (const id of sent) unacknowledged.add(id);
      deadline = Date.now() + 100_000;
      await Promise.all(containers.map(container));
    };
    // The stock first: orders of other groups could otherwise run before it arrived, and be refused.
    await consume(stock, 2);
    await consume(orders, 4);

    expect(unacknowledged.size).toBe(0);
    expect(stats.sent).toBeGreaterThan(250);
    expect(stats.failedBatches).toBeGreaterThan(0);
    expect(outage.failures).toBe(stats.failedBatches);
    expect(await actualLedger(consumer.dynamodb, consumer.ledgerTable)).toEqual(
      expectedLedger([...stock, ...orders]),
    );
    expect(consumer.metricCount(CONSUMER_METRICS.processed)).toBe(stock.length + orders.length);
    expect(consumer.metricCount(CONSUMER_METRICS.duplicate)).toBeGreaterThan(0);
    expect(await dlqDepth(consumer.dlq)).toBe(0);
  }, 240_000);

  it('refuses an order that would take stock below zero: nothing of it applied, to the DLQ, its group goes on', async () => {
    const consumer = await ledgerConsumer();
    const sku = `sku-${randomUUID()}`;
    const order = (orderId: string, quantity: number) => ({
      type: 'OrderPlaced',
      groupId: 'customer-x',
      key: orderId,
      payload: { orderId, customerId: 'customer-x', sku, quantity, amountCents: 500 * quantity },
    });
    await publish(sqs, consumer.queue.url, {
      type: 'StockReceived',
      groupId: 'customer-x',
      key: `stock-${sku}`,
      payload: { sku, quantity: 2 },
    });
    const refusedId = await publish(sqs, consumer.queue.url, order('too-many', 3));
    await publish(sqs, consumer.queue.url, order('just-enough', 2));

    const [poll] = await pollUntil(sqs, consumer.queue, consumer.handler, (polls) => polls.length === 1);
    expect(poll?.records).toHaveLength(3);
    expect(poll?.response?.batchItemFailures).toEqual([]);
    const ledger = await actualLedger(consumer.dynamodb, consumer.ledgerTable);
    expect(ledger).toEqual({
      [ledgerItemId.stock(sku)]: 0,
      [ledgerItemId.account('customer-x')]: -1_000,
      [ledgerItemId.order('just-enough')]: 'PLACED',
    });

    const [dead] = await receiveMessages(sqs, consumer.dlq.url, 1);
    const attribute = (name: string) => dead?.MessageAttributes?.[name]?.StringValue;
    expect(attribute(DLQ_ATTRIBUTES.originalMessageId)).toBe(refusedId);
    expect(attribute(DLQ_ATTRIBUTES.errorName)).toBe('BusinessRuleViolationError');
    expect(attribute(DLQ_ATTRIBUTES.errorMessage)).toBe(
      `OrderPlaced "too-many" was refused and nothing was applied: stock never goes below zero: fewer than 3 of ${sku} are left`,
    );
  });
});
