import { randomUUID } from 'node:crypto';
import { BatchGetItemCommand, GetItemCommand } from '@aws-sdk/client-dynamodb';
import { InvokeCommand, ResourceNotFoundException } from '@aws-sdk/client-lambda';
import {
  GetQueueAttributesCommand,
  ReceiveMessageCommand,
  SendMessageCommand,
  StartMessageMoveTaskCommand,
} from '@aws-sdk/client-sqs';
import { unmarshall } from '@aws-sdk/util-dynamodb';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type OperationsCommand, parseCommandLine } from '../../../cli/command-line.js';
import type { MessageHistory } from '../../../cli/history-story.js';
import { runOperation } from '../../../cli/operations-command.js';
import { PublishConflictError, PublishValidationError, publish } from '../../../lambdas/client/index.js';
import { createEnvelope, type OutgoingMessage } from '../../../lambdas/common/envelope.js';
import { LEDGER_NAMESPACE, ledgerItemId } from '../../../lambdas/shop/consumer/ledger.js';
import { orderPlacedKey } from '../../../lambdas/shop/orders/place-order.js';
import { BUSY_MACHINE_RETRY } from '../../support/publisher.js';
import {
  outboxStatus,
  placeOrder,
  readOrder,
  readOutboxItems,
  readPendingMarkers,
} from './orders-service.js';
import { declaredLeaseRecords, declaredQueueType, type E2eTarget, startTarget } from './target.js';

// The whole pipeline, end to end: client → Invoke → publisher → SQS → event source → consumer
// → ledger, and the orders service's path: PlaceOrder → its table's outbox → relay → SQS.
// Against the target the environment names (./target.ts): a fresh sandbox by default, or a stack;
// its queue FIFO, or standard (fair: the publisher and the relay send each groupId as the tenant),
// where every case holds but order, and a sandbox delivers every batch twice at once and again later.
// pipeline.test.ts and pipeline-standard.test.ts run it so; stack-target.test.ts and
// stack-target-standard.test.ts run it through the stack target, on a sandbox.

let target: E2eTarget;
// The cases are chosen before the target is reached: startTarget checks it is of this type.
const queueType = declaredQueueType();
// With `valkey` (ONCELY_LEASE_RECORDS), the consumer's DLQ marks and log are in the cache, which
// `oncely history` does not read yet (docs/construct.md, "Not yet on Valkey").
const leaseRecords = declaredLeaseRecords();
const run = randomUUID().slice(0, 8);
// A wide bound: on a busy machine 320 messages through the sandbox took longer than a minute.
const WAIT = { timeout: 120_000, interval: 200 };

beforeAll(async () => {
  target = await startTarget();
}, 240_000);

afterAll(async () => {
  await target?.stop();
});

const send = (messages: OutgoingMessage[], requestId?: string) =>
  publish(messages, {
    functionName: target.resources.publisherFunctionName,
    lambda: target.lambda,
    requestId,
    retry: BUSY_MACHINE_RETRY,
  });

const stockReceived = (sku: string, quantity: number): OutgoingMessage => ({
  type: 'StockReceived',
  groupId: 'warehouse',
  key: `stock-${sku}-${quantity}`,
  payload: { sku, quantity },
});

function order(orderId: string, customerId: string, sku: string, quantity = 1, amountCents = 100) {
  const payload = { orderId, customerId, sku, quantity, amountCents };
  return {
    placed: { type: 'OrderPlaced', groupId: customerId, key: `placed-${orderId}`, payload },
    paid: {
      type: 'PaymentCaptured',
      groupId: customerId,
      key: `paid-${orderId}`,
      payload: { orderId, customerId, amountCents },
    },
    cancelled: { type: 'OrderCancelled', groupId: customerId, key: `cancelled-${orderId}`, payload },
  } satisfies Record<string, OutgoingMessage>;
}

async function ledgerNumber(id: string, attribute: string): Promise<number | undefined> {
  const { Item } = await target.dynamodb.send(
    new GetItemCommand({
      TableName: target.ledgerTableName,
      Key: { id: { S: id } },
      ConsistentRead: true,
    }),
  );
  return Item ? Number(unmarshall(Item)[attribute]) : undefined;
}
const ledgerOrder = async (orderId: string) => {
  const { Item } = await target.dynamodb.send(
    new GetItemCommand({
      TableName: target.ledgerTableName,
      Key: { id: { S: ledgerItemId.order(orderId) } },
      ConsistentRead: true,
    }),
  );
  return Item ? unmarshall(Item) : undefined;
};
const balance = (customerId: string) => ledgerNumber(ledgerItemId.account(customerId), 'balanceCents');
const stock = (sku: string) => ledgerNumber(ledgerItemId.stock(sku), 'available');

async function orderStatuses(orderIds: string[]): Promise<Map<string, string>> {
  const statuses = new Map<string, string>();
  for (let i = 0; i < orderIds.length; i += 100) {
    const keys = orderIds.slice(i, i + 100).map((id) => ({ id: { S: ledgerItemId.order(id) } }));
    const { Responses } = await target.dynamodb.send(
      new BatchGetItemCommand({
        RequestItems: { [target.ledgerTableName]: { Keys: keys, ConsistentRead: true } },
      }),
    );
    for (const item of Responses?.[target.ledgerTableName] ?? []) {
      const { id, status } = unmarshall(item) as { id: string; status: string };
      statuses.set(id.replace('order#', ''), status);
    }
  }
  return statuses;
}

/** `oncely history KEY --namespace NS --json` against the target, as a user runs it. */
async function historyOf(key: string, namespace: string): Promise<MessageHistory> {
  const where =
    target.operations.kind === 'stack'
      ? ['--stack', target.operations.stackName]
      : ['--ready-file', target.operations.readyFile];
  const command = parseCommandLine(['history', key, '--namespace', namespace, '--json', ...where], {});
  let printed = '';
  expect(await runOperation(command as OperationsCommand, { print: (text) => (printed = text) })).toBe(0);
  return JSON.parse(printed) as MessageHistory;
}

/** Messages in a queue, visible or in flight. */
async function depth(queueUrl: string): Promise<number> {
  const { Attributes } = await target.sqs.send(
    new GetQueueAttributesCommand({
      QueueUrl: queueUrl,
      AttributeNames: ['ApproximateNumberOfMessages', 'ApproximateNumberOfMessagesNotVisible'],
    }),
  );
  return (
    Number(Attributes?.ApproximateNumberOfMessages ?? 0) +
    Number(Attributes?.ApproximateNumberOfMessagesNotVisible ?? 0)
  );
}

/** The groups of the DLQ's copies of a message key, left visible: a look, not a take. */
async function dlqGroupsOf(key: string): Promise<(string | undefined)[]> {
  const { Messages = [] } = await target.sqs.send(
    new ReceiveMessageCommand({
      QueueUrl: target.resources.dlqUrl,
      MaxNumberOfMessages: 10,
      VisibilityTimeout: 0,
      MessageSystemAttributeNames: ['MessageGroupId'],
    }),
  );
  return Messages.filter((message) => JSON.parse(message.Body ?? '{}').key === key).map(
    (message) => message.Attributes?.MessageGroupId,
  );
}

describe('Oncely end to end', { timeout: 300_000 }, () => {
  it('publishes, consumes and applies an effect exactly once', async () => {
    const sku = `sku-${run}-once`;
    const purchase = order(`o-${run}-once`, `c-${run}-once`, sku, 2, 500);
    await send([stockReceived(sku, 10)]);
    await expect.poll(() => stock(sku), WAIT).toBe(10);
    const { results } = await send([purchase.placed]);
    expect(results).toEqual([expect.objectContaining({ key: purchase.placed.key, status: 'sent' })]);
    await expect.poll(() => balance(`c-${run}-once`), WAIT).toBe(-500);
    expect(await stock(sku)).toBe(8);
  });

  it('stops duplicates at every layer: the publisher, SQS (FIFO) and the consumer', async () => {
    const sku = `sku-${run}-dup`;
    const customer = `c-${run}-dup`;
    const purchase = order(`o-${run}-dup`, customer, sku, 1, 700);
    await send([stockReceived(sku, 5)]);
    await expect.poll(() => stock(sku), WAIT).toBe(5);

    const first = await send([purchase.placed]);
    // The publisher: the same request again is answered from its record.
    expect((await send([purchase.placed], first.requestId)).results).toEqual(first.results);
    // SQS: on FIFO a new request with the same key is deduplicated within 5 minutes (same message
    // id); a standard queue takes it as a second message, which the consumer must drop.
    const retry = await send([purchase.placed]);
    expect(retry.requestId).not.toBe(first.requestId);
    const [original] = first.results;
    if (original?.status !== 'sent')
      throw new Error(`the first publish was not sent: ${JSON.stringify(original)}`);
    const fifo = queueType === 'fifo';
    expect(retry.results[0]).toMatchObject({ status: 'sent' });
    const retryId = retry.results[0]?.status === 'sent' ? retry.results[0].messageId : undefined;
    if (fifo) expect(retryId).toBe(original.messageId);
    else expect(retryId).not.toBe(original.messageId);
    // The consumer: the same envelope with a new dedup id, as after SQS's window; on a standard
    // queue without a group, as a plain (not fair) standard queue's message.
    await target.sqs.send(
      new SendMessageCommand({
        QueueUrl: target.resources.queueUrl,
        MessageBody: JSON.stringify(createEnvelope(purchase.placed)),
        ...(fifo ? { MessageGroupId: customer, MessageDeduplicationId: randomUUID() } : {}),
      }),
    );
    await expect.poll(() => balance(customer), WAIT).toBe(-700);
    await expect.poll(() => depth(target.resources.queueUrl), WAIT).toBe(0);
    expect(await balance(customer)).toBe(-700);
    expect(await stock(sku)).toBe(4);
  });

  it('sends a poison message to the DLQ at once; after the fix, a redrive processes it once', async () => {
    const sku = `sku-${run}-late`;
    const customer = `c-${run}-late`;
    const purchase = order(`o-${run}-late`, customer, sku, 1, 300);
    const dlqBefore = await depth(target.resources.dlqUrl);
    await send([purchase.placed]); // no stock yet: the business rule rejects it
    // Once on a standard queue too, though delivered to two invocations at once: the first to
    // claim the send sends it (DESIGN §5), and a standard DLQ has no deduplication to rely on.
    await expect.poll(() => depth(target.resources.dlqUrl), WAIT).toBe(dlqBefore + 1);
    expect(await balance(customer)).toBeUndefined();
    // In the DLQ in its group: on FIFO its customer's, on a fair queue its tenant's, the same id.
    await expect.poll(() => dlqGroupsOf(purchase.placed.key), WAIT).toContain(customer);

    await send([stockReceived(sku, 3)]);
    await expect.poll(() => stock(sku), WAIT).toBe(3);
    await target.sqs.send(
      new StartMessageMoveTaskCommand({
        SourceArn: target.resources.dlqArn,
        DestinationArn: target.resources.queueArn,
      }),
    );
    await expect.poll(() => balance(customer), WAIT).toBe(-300);
    await expect.poll(() => depth(target.resources.dlqUrl), WAIT).toBe(dlqBefore);
    await expect.poll(() => depth(target.resources.queueUrl), WAIT).toBe(0);
    expect(await balance(customer)).toBe(-300);
    expect(await stock(sku)).toBe(2);

    // Its story, from the command: published, dead-lettered, redriven, applied — in that order.
    const story = await historyOf(purchase.placed.key, LEDGER_NAMESPACE);
    const recordId = `${LEDGER_NAMESPACE}#${purchase.placed.key}`;
    if (leaseRecords === 'valkey') {
      // The ledger's transactional record, in the table, still tells the effect applied once.
      expect(story.steps.map((step) => [step.source, step.event])).toEqual([
        ['envelope', 'published'],
        ['record', 'delivered: effect applied in one transaction'],
      ]);
    } else {
      expect(story.steps.map((step) => [step.source, step.event])).toEqual([
        ['envelope', 'published'],
        ['dlq', 'sent to the DLQ'],
        ['record', 'delivered (a redriven copy): effect applied in one transaction'],
      ]);
      expect(story.steps[1]).toMatchObject({ recordId, detail: 'BusinessRuleViolationError' });
      expect(story.steps[2]?.messageId).not.toBe(story.steps[1]?.messageId);
    }
    expect(story.records).toEqual([
      expect.objectContaining({ id: recordId, status: 'COMPLETED', attempts: 1 }),
    ]);
    expect(story.next).toEqual([expect.stringMatching(new RegExp(`^${recordId}: done`))]);
  });

  // A standard queue keeps no order: the case is FIFO's alone.
  if (queueType === 'fifo')
    it('keeps each group in order under concurrent publishers', async () => {
      const sku = `sku-${run}-order`;
      await send([stockReceived(sku, 10_000)]);
      await expect.poll(() => stock(sku), WAIT).toBe(10_000);
      const dlqBefore = await depth(target.resources.dlqUrl);
      const orderIds: string[] = [];
      // A payment or cancellation applied before its order would fail its condition and land in the DLQ.
      const publishers = Array.from({ length: 5 }, (_, p) => {
        const messages: OutgoingMessage[] = [];
        for (let c = 0; c < 8; c++) {
          for (let o = 0; o < 4; o++) {
            const orderId = `o-${run}-${p}-${c}-${o}`;
            orderIds.push(orderId);
            const purchase = order(orderId, `c-${run}-${p}-${c}`, sku);
            messages.push(purchase.placed, o % 2 === 0 ? purchase.paid : purchase.cancelled);
          }
        }
        return send(messages);
      });
      await Promise.all(publishers);
      await expect
        .poll(
          async () => [...(await orderStatuses(orderIds)).values()].filter((s) => s !== 'PLACED').length,
          WAIT,
        )
        .toBe(orderIds.length);
      const statuses = await orderStatuses(orderIds);
      expect(orderIds.filter((id, i) => statuses.get(id) !== (i % 2 === 0 ? 'PAID' : 'CANCELLED'))).toEqual(
        [],
      );
      expect(await depth(target.resources.dlqUrl)).toBe(dlqBefore);
      expect(await stock(sku)).toBe(10_000 - orderIds.length / 2);
    });

  it('applies every order once under concurrent publishers, each published twice (on standard, delivered again too)', async () => {
    const sku = `sku-${run}-copies`;
    await send([stockReceived(sku, 10_000)]);
    await expect.poll(() => stock(sku), WAIT).toBe(10_000);
    const dlqBefore = await depth(target.resources.dlqUrl);
    const receivedBefore = target.receivedRecords?.();
    const customers = Array.from({ length: 20 }, (_, c) => `c-${run}-copies-${c}`);
    const placed = customers.flatMap((customer) =>
      [0, 1, 2].map((o) => order(`o-${customer}-${o}`, customer, sku).placed),
    );
    const orderIds = placed.map((message) => message.payload.orderId);
    // Each order published twice, by two publishers at once: two messages on the queue, one key.
    const publishers = [0, 1, 2, 3].map((p) => send(placed.filter((_, i) => i % 2 === p % 2)));
    for (const { results } of await Promise.all(publishers)) {
      expect(results.filter((result) => result.status !== 'sent')).toEqual([]);
    }
    await expect
      .poll(
        async () => [...(await orderStatuses(orderIds)).values()].filter((s) => s === 'PLACED').length,
        WAIT,
      )
      .toBe(orderIds.length);
    await expect.poll(() => depth(target.resources.queueUrl), WAIT).toBe(0);
    expect(await stock(sku)).toBe(10_000 - orderIds.length);
    expect(await Promise.all(customers.map(balance))).toEqual(customers.map(() => -300));
    expect(await depth(target.resources.dlqUrl)).toBe(dlqBefore);
    // On a standard sandbox the consumer saw each copy more than once: the duplicate deliveries
    // happened (on FIFO, SQS dropped the second publish of each key itself).
    if (receivedBefore !== undefined && queueType === 'standard') {
      expect((target.receivedRecords?.() ?? 0) - receivedBefore).toBeGreaterThanOrEqual(4 * orderIds.length);
    }
  });

  it('answers with the error shapes the client and the AWS SDK understand', async () => {
    const invalid = send([{ type: '', groupId: 'has space', payload: 1 }]);
    await expect(invalid).rejects.toBeInstanceOf(PublishValidationError);
    await expect(invalid).rejects.toMatchObject({
      problems: expect.arrayContaining([expect.objectContaining({ index: 0 })]),
    });

    const requestId = randomUUID();
    await send([stockReceived(`sku-${run}-conflict`, 1)], requestId);
    await expect(send([stockReceived(`sku-${run}-conflict`, 2)], requestId)).rejects.toBeInstanceOf(
      PublishConflictError,
    );

    const raw = await target.lambda.send(
      new InvokeCommand({
        FunctionName: target.resources.publisherFunctionName,
        Payload: new TextEncoder().encode(JSON.stringify({ messages: 'not a list' })),
      }),
    );
    expect(raw.FunctionError).toBe('Unhandled');
    expect(JSON.parse(new TextDecoder().decode(raw.Payload))).toMatchObject({
      errorType: 'PublishValidationError',
    });
    await expect(
      target.lambda.send(new InvokeCommand({ FunctionName: `missing-${run}` })),
    ).rejects.toBeInstanceOf(ResourceNotFoundException);
  });

  it('refuses a payload nested thousands of levels deep with a validation error, not a crash', async () => {
    // Built as text: JSON.stringify itself overflows on such a value.
    const deep = `${'['.repeat(10_000)}${']'.repeat(10_000)}`;
    const body = `{"messages":[{"type":"Deep","groupId":"g-${run}","payload":${deep}}]}`;
    const raw = await target.lambda.send(
      new InvokeCommand({
        FunctionName: target.resources.publisherFunctionName,
        Payload: new TextEncoder().encode(body),
      }),
    );
    expect(raw.FunctionError).toBe('Unhandled');
    expect(JSON.parse(new TextDecoder().decode(raw.Payload))).toMatchObject({
      errorType: 'PublishValidationError',
      errorMessage: expect.stringContaining('messages[0].payload'),
    });
  });
});

describe('The orders service, through its outbox', { timeout: 300_000 }, () => {
  const newOrder = (name: string, sku: string, quantity: number, amountCents: number) => ({
    orderId: `o-${run}-${name}`,
    customerId: `c-${run}-${name}`,
    sku,
    quantity,
    amountCents,
  });

  it('places orders with PlaceOrder; each takes stock, charges the customer and records the order once', async () => {
    const sku = `sku-${run}-placed`;
    await send([stockReceived(sku, 10)]);
    await expect.poll(() => stock(sku), WAIT).toBe(10);
    const customerId = `c-${run}-placed`;
    const orders = [1, 2, 3].map((n) => ({ ...newOrder(`placed-${n}`, sku, n, 100 * n), customerId }));
    for (const order of orders) {
      expect(await placeOrder(target, order)).toEqual({
        payload: { orderId: order.orderId, eventKey: orderPlacedKey(order.orderId) },
      });
    }
    await expect.poll(() => balance(customerId), WAIT).toBe(-600);
    // Once: every event has left the outbox and the queue is empty, and the effects stayed as they were.
    await expect
      .poll(() => Promise.all(orders.map((o) => outboxStatus(target, orderPlacedKey(o.orderId)))), WAIT)
      .toEqual(['SENT', 'SENT', 'SENT']);
    await expect.poll(() => depth(target.resources.queueUrl), WAIT).toBe(0);
    expect(await balance(customerId)).toBe(-600);
    expect(await stock(sku)).toBe(4);
    for (const { orderId, ...order } of orders) {
      expect(await ledgerOrder(orderId)).toMatchObject({ ...order, status: 'PLACED' });
    }
  });

  it('refuses an order id placed before with OrderAlreadyPlacedError, and changes nothing', async () => {
    const sku = `sku-${run}-again`;
    await send([stockReceived(sku, 5)]);
    await expect.poll(() => stock(sku), WAIT).toBe(5);
    const order = newOrder('again', sku, 2, 400);
    const key = orderPlacedKey(order.orderId);
    expect((await placeOrder(target, order)).functionError).toBeUndefined();
    await expect.poll(() => balance(order.customerId), WAIT).toBe(-400);
    await expect.poll(() => outboxStatus(target, key), WAIT).toBe('SENT');
    const items = async () => ({
      order: await readOrder(target, order.orderId),
      event: await readOutboxItems(target, key),
      pending: await readPendingMarkers(target, order.customerId),
    });
    const before = await items();

    const again = await placeOrder(target, { ...order, quantity: 1, amountCents: 999 });
    expect(again.functionError).toBe('Unhandled');
    expect(again.payload).toMatchObject({ errorType: 'OrderAlreadyPlacedError' });
    // Nothing written: the order and its event are as they were, and no message waits to be sent.
    expect(await items()).toEqual(before);
    expect(before.pending).toEqual([]);
    await expect.poll(() => depth(target.resources.queueUrl), WAIT).toBe(0);
    expect(await balance(order.customerId)).toBe(-400);
    expect(await stock(sku)).toBe(3);
  });

  it('applies a PaymentCaptured published through the client once its OrderPlaced was relayed (standard: applied)', async () => {
    const sku = `sku-${run}-paid`;
    await send([stockReceived(sku, 5)]);
    await expect.poll(() => stock(sku), WAIT).toBe(5);
    const dlqBefore = await depth(target.resources.dlqUrl);
    const placed = newOrder('paid', sku, 1, 250);
    expect((await placeOrder(target, placed)).functionError).toBeUndefined();
    // Two producers, one group: the payment goes out only once the order's event is on the queue.
    await expect.poll(() => outboxStatus(target, orderPlacedKey(placed.orderId)), WAIT).toBe('SENT');
    // A standard queue keeps no order: the payment waits for the order's effect, not only its send.
    if (queueType === 'standard') {
      await expect.poll(async () => (await ledgerOrder(placed.orderId))?.status, WAIT).toBe('PLACED');
    }
    const { paid } = order(placed.orderId, placed.customerId, sku, 1, 250);
    expect((await send([paid])).results).toEqual([expect.objectContaining({ status: 'sent' })]);
    await expect.poll(async () => (await ledgerOrder(placed.orderId))?.status, WAIT).toBe('PAID');
    expect(await balance(placed.customerId)).toBe(0);
    expect(await stock(sku)).toBe(4);
    expect(await depth(target.resources.dlqUrl)).toBe(dlqBefore);
  });
});
