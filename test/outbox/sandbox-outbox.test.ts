import { DynamoDBClient, ScanCommand } from '@aws-sdk/client-dynamodb';
import { InvokeCommand, LambdaClient } from '@aws-sdk/client-lambda';
import { unmarshall } from '@aws-sdk/util-dynamodb';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { type FaultProxy, startFaultProxy } from '../../harness/fault-proxy.js';
import { publish } from '../../lambdas/client/index.js';
import { OUTBOX_ATTRIBUTES } from '../../lambdas/outbox/layout.js';
import { ledgerItemId } from '../../lambdas/shop/consumer/ledger.js';
import { localAwsConfig } from '../../sandbox/local-aws-config.js';
import { type Sandbox, startSandbox } from '../../sandbox/local-sandbox.js';
import type { StreamBatchReport } from '../../sandbox/stream-poller.js';
import { BUSY_MACHINE_RETRY } from '../support/publisher.js';
import { sharedAssembly } from '../support/shared-assembly.js';

// The example shop in the sandbox, its functions' SQS requests through a fault proxy: orders placed
// while SQS refuses every send stay in the outbox through the relay's retries, and the sweeper
// delivers them once SQS is back — each applied once by the consumer.

let sandbox: Sandbox;
let sqsProxy: FaultProxy;
let lambda: LambdaClient;
let dynamodb: DynamoDBClient;
let sqsDown = false;
const relayBatches: StreamBatchReport[] = [];

beforeAll(async () => {
  sandbox = await startSandbox({
    appDirectory: '.',
    cloudAssembly: await sharedAssembly('.'),
    environment: { POWERTOOLS_LOG_LEVEL: 'CRITICAL' },
    functionOutput: () => undefined,
    // The sweeper every second (its rule's rate is a minute); in the sandbox it sweeps what is 10 s old.
    scheduleIntervalMs: 1_000,
    onStreamBatch: (_, report) => relayBatches.push(report),
    routeFunctions: async (emulators) => {
      sqsProxy = await startFaultProxy({
        service: 'sqs',
        upstream: emulators.sqs,
        plan: (request) =>
          sqsDown && request.operation === 'SendMessageBatch' ? { kind: 'fail-before' } : undefined,
      });
      return { dynamodb: emulators.dynamodb, sqs: sqsProxy.endpoint };
    },
  });
  const { endpoints, region } = sandbox.description;
  lambda = new LambdaClient({ ...localAwsConfig(endpoints.lambda), region, maxAttempts: 1 });
  dynamodb = new DynamoDBClient(localAwsConfig(endpoints.dynamodb));
}, 180_000);

// SQS comes back after each test, whether it passed or not: the next one starts with it up.
afterEach(() => {
  sqsDown = false;
});

afterAll(async () => {
  lambda?.destroy();
  dynamodb?.destroy();
  await sandbox?.stop();
  await sqsProxy?.close();
});

const outputs = () => sandbox.description.outputs;

async function placeOrder(order: Record<string, unknown>) {
  const answer = await lambda.send(
    new InvokeCommand({
      FunctionName: outputs().placeOrderFunctionName,
      Payload: Buffer.from(JSON.stringify(order)),
    }),
  );
  return {
    error: answer.FunctionError,
    payload: JSON.parse(Buffer.from(answer.Payload ?? []).toString() || 'null'),
  };
}

async function outboxItems() {
  const { Items = [] } = await dynamodb.send(
    new ScanCommand({ TableName: outputs().OrdersTableName, ConsistentRead: true }),
  );
  return Items.map((item) => unmarshall(item)).filter((item) => String(item.pk).startsWith('oncely-outbox#'));
}

async function ledgerNumber(id: string, attribute: string): Promise<number | undefined> {
  const { Items = [] } = await dynamodb.send(
    new ScanCommand({ TableName: outputs().LedgerTableName, ConsistentRead: true }),
  );
  const item = Items.map((raw) => unmarshall(raw)).find((candidate) => candidate.id === id);
  return item ? Number(item[attribute]) : undefined;
}

describe('the shop’s orders through the outbox, with SQS down for a while', () => {
  it('keeps the orders pending through the relay’s retries; the sweeper delivers them once SQS recovers', async () => {
    const resources = sandbox.pipelineResources();
    await publish(
      [
        {
          type: 'StockReceived',
          groupId: 'warehouse',
          key: 'stock-outage',
          payload: { sku: 'sku-outage', quantity: 100 },
        },
      ],
      { functionName: resources.publisherFunctionName, lambda, retry: BUSY_MACHINE_RETRY },
    );
    await expect
      .poll(() => ledgerNumber(ledgerItemId.stock('sku-outage'), 'available'), { timeout: 60_000 })
      .toBe(100);

    sqsDown = true;
    const orders = Array.from({ length: 6 }, (_, i) => ({
      orderId: `outage-${i}`,
      customerId: `outage-customer-${i % 2}`,
      sku: 'sku-outage',
      quantity: 1,
      amountCents: 100 + i,
    }));
    for (const order of orders) expect((await placeOrder(order)).error).toBeUndefined();
    // The relay fails and retries its batch; once the messages are old enough, the sweeper tries too
    // (and while it holds a group, the relay leaves that group to it). Wait until the relay is done
    // with every order's stream record (given up on, or left to the sweeper: it will never be given
    // one of them again) and every message has failed at least once: they all stay pending.
    const relayDone = () =>
      relayBatches.reduce((done, report) => done + report.checkpointed + report.discarded, 0);
    await expect
      .poll(
        async () => {
          const items = await outboxItems();
          return (
            relayBatches.some((report) => report.retrying > 0) &&
            relayDone() === orders.length &&
            items.length === orders.length &&
            items.every(
              (item) => item[OUTBOX_ATTRIBUTES.status] === 'PENDING' && item[OUTBOX_ATTRIBUTES.lastError],
            )
          );
        },
        { timeout: 90_000, interval: 500 },
      )
      .toBe(true);

    sqsDown = false;
    await expect
      .poll(async () => (await outboxItems()).every((item) => item[OUTBOX_ATTRIBUTES.status] === 'SENT'), {
        timeout: 90_000,
        interval: 250,
      })
      .toBe(true);
    expect((await outboxItems()).map((item) => item[OUTBOX_ATTRIBUTES.sentBy])).toEqual(
      orders.map(() => 'sweeper'),
    );
    // Each order applied once: 6 taken from the stock.
    await expect
      .poll(() => ledgerNumber(ledgerItemId.stock('sku-outage'), 'available'), { timeout: 60_000 })
      .toBe(94);
  }, 300_000);

  it('refuses an order id placed before: nothing more is written or published', async () => {
    const order = {
      orderId: 'twice',
      customerId: 'twice-customer',
      sku: 'sku-outage',
      quantity: 2,
      amountCents: 500,
    };
    expect((await placeOrder(order)).error).toBeUndefined();
    await expect
      .poll(() => ledgerNumber(ledgerItemId.account('twice-customer'), 'balanceCents'), { timeout: 60_000 })
      .toBe(-500);
    const before = (await outboxItems()).length;

    const again = await placeOrder({ ...order, amountCents: 700 });
    expect(again.error).toBe('Unhandled');
    expect(again.payload).toMatchObject({ errorType: 'OrderAlreadyPlacedError' });
    expect((await outboxItems()).length).toBe(before);
    expect(await ledgerNumber(ledgerItemId.account('twice-customer'), 'balanceCents')).toBe(-500);
  });
});
