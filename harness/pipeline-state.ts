import { type DynamoDBClient, paginateScan } from '@aws-sdk/client-dynamodb';
import { DeleteMessageBatchCommand, ReceiveMessageCommand, type SQSClient } from '@aws-sdk/client-sqs';
import { unmarshall } from '@aws-sdk/util-dynamodb';
import type { OutgoingMessage } from '../lambdas/common/envelope.js';
import { messagesInQueue } from '../lambdas/common/queue-depth.js';
import type { IdempotencyRecord } from '../lambdas/idempotency/record.js';
import { LEDGER_NAMESPACE } from '../lambdas/shop/consumer/ledger.js';
import { differences } from './ledger-snapshot.js';

/*
 * The pipeline's state at the end of a run under faults, read for its checks: the idempotency
 * records, the DLQ's copies and the ledger the COMPLETED records imply (the chaos run's and the soak's).
 */

/**
 * Transactional effects: the ledger must be exactly the effects of the COMPLETED ledger records,
 * each once. One line per SKU or customer that differs.
 */
export function ledgerViolations(
  messages: OutgoingMessage[],
  records: Map<string, IdempotencyRecord>,
  ledger: { stock: Map<string, number>; balances: Map<string, number> },
): string[] {
  const expected = expectedLedger(
    messages,
    (key) => records.get(`${LEDGER_NAMESPACE}#${key}`)?.status === 'COMPLETED',
  );
  return [
    ...differences(expected.stock, ledger.stock),
    ...differences(expected.balances, ledger.balances),
  ].map((difference) => `ledger: ${difference}`);
}

/** The ledger as the COMPLETED ledger records say it must be: each such event's effect once. */
function expectedLedger(messages: OutgoingMessage[], completed: (key: string) => boolean) {
  const stock = new Map<string, number>();
  const balances = new Map<string, number>();
  const add = (map: Map<string, number>, id: string, delta: number) =>
    map.set(id, (map.get(id) ?? 0) + delta);
  const seen = new Set<string>();
  for (const { type, key, payload } of messages) {
    if (!key || seen.has(key) || !completed(key)) continue;
    seen.add(key);
    const p = payload as { sku: string; quantity: number; customerId: string; amountCents: number };
    if (type === 'StockReceived') add(stock, p.sku, p.quantity);
    if (type === 'OrderPlaced') {
      add(stock, p.sku, -p.quantity);
      add(balances, p.customerId, -p.amountCents);
    }
    if (type === 'PaymentCaptured') add(balances, p.customerId, p.amountCents);
    if (type === 'OrderCancelled') {
      add(stock, p.sku, p.quantity);
      add(balances, p.customerId, p.amountCents);
    }
  }
  return { stock, balances };
}

/** Waits until nothing is queued or in flight, twice in a row (a redelivery may be about to appear). */
export async function settle(
  sqs: SQSClient,
  queueUrl: string,
  timeoutMs: number,
  onDepth?: (depth: number) => void,
): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  let quiet = 0;
  while (quiet < 2) {
    if (Date.now() > deadline) throw new Error(`the queue did not empty within ${timeoutMs} ms`);
    const depth = await messagesInQueue(sqs, queueUrl);
    quiet = depth === 0 ? quiet + 1 : 0;
    onDepth?.(depth);
    await new Promise((resolve) => setTimeout(resolve, 500));
  }
}

export async function readRecords(
  dynamodb: DynamoDBClient,
  tableName: string,
): Promise<Map<string, IdempotencyRecord>> {
  const records = new Map<string, IdempotencyRecord>();
  for await (const page of paginateScan(
    { client: dynamodb },
    { TableName: tableName, ConsistentRead: true },
  )) {
    for (const item of page.Items ?? []) {
      const record = unmarshall(item) as IdempotencyRecord;
      records.set(record.id, record);
    }
  }
  return records;
}

/** One copy found in the DLQ: its envelope's key and the reason the consumer gave (`ErrorName`). */
export interface DeadLetter {
  key: string;
  reason: string;
}

/**
 * The DLQ's copies: key → copies, reason → copies, and each copy; received and deleted (a FIFO
 * queue hides a group's rest behind its head).
 */
export async function drainDeadLetters(sqs: SQSClient, dlqUrl: string) {
  const copies = new Map<string, number>();
  const reasons: Record<string, number> = {};
  const entries: DeadLetter[] = [];
  for (;;) {
    const { Messages = [] } = await sqs.send(
      new ReceiveMessageCommand({
        QueueUrl: dlqUrl,
        MaxNumberOfMessages: 10,
        MessageAttributeNames: ['All'],
      }),
    );
    if (Messages.length === 0) return { copies, reasons, entries };
    for (const message of Messages) {
      const reason =
        message.MessageAttributes?.ErrorName?.StringValue ?? '(moved by SQS after maxReceiveCount)';
      reasons[reason] = (reasons[reason] ?? 0) + 1;
      let key = '(not an envelope)';
      try {
        key = (JSON.parse(message.Body ?? '') as { key: string }).key;
      } catch {}
      copies.set(key, (copies.get(key) ?? 0) + 1);
      entries.push({ key, reason });
    }
    await sqs.send(
      new DeleteMessageBatchCommand({
        QueueUrl: dlqUrl,
        Entries: Messages.map((message, index) => ({
          Id: String(index),
          ReceiptHandle: message.ReceiptHandle,
        })),
      }),
    );
  }
}
