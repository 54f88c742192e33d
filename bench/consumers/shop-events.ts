import { type DynamoDBDocumentClient, TransactWriteCommand, UpdateCommand } from '@aws-sdk/lib-dynamodb';
import { z } from 'zod';
import type { TransactionWrite } from '../../lambdas/idempotency/index.js';
import { ledgerWrites } from '../../lambdas/shop/consumer/ledger-writes.js';

/** Where the shop's effects go. */
export interface ShopSettings {
  ledgerTableName: string;
  notificationUrl: string;
}

/** What a consumer reads from a record's body (DESIGN §2's envelope). */
export interface ShopEvent {
  type: string;
  key: string;
  payload: unknown;
}

/** The example consumer's variables for the same settings (README "Writing a consumer"). */
export function shopSettingsFromEnvironment(): ShopSettings {
  return {
    ledgerTableName: requiredVariable('LEDGER_TABLE_NAME'),
    notificationUrl: requiredVariable('NOTIFICATION_URL'),
  };
}

export function requiredVariable(name: string): string {
  const value = process.env[name];
  if (!value) throw new Error(`${name} is not set`);
  return value;
}

class UnknownShopEventError extends Error {
  override readonly name = 'UnknownShopEventError';
}

const id = z.string().min(1).max(100);
const count = z.int().positive();
const stockReceived = z.object({ sku: id, quantity: count });
const order = z.object({ orderId: id, customerId: id, sku: id, quantity: count, amountCents: count });
const paymentCaptured = z.object({ orderId: id, customerId: id, amountCents: count });
const sendNotification = z.object({
  to: z.email(),
  subject: z.string().min(1).max(200),
  body: z.string().min(1).max(100_000),
});

/**
 * The example consumer's business logic (lambdas/shop/consumer) as a consumer without Oncely does it:
 * validate the payload, then send the ledger writes itself — one request for a single write, a
 * transaction for several — or POST the notification. It throws what the effect threw (a refused
 * write, a failed POST). The benchmarks' Powertools and idempotency-free consumers share it, so
 * that they differ from the example consumer only in how they make it happen once.
 */
export function shopEventEffect(documents: DynamoDBDocumentClient, settings: ShopSettings) {
  const writes = ledgerWrites(settings.ledgerTableName);
  const ledgerPlans: Record<string, (payload: unknown) => TransactionWrite[]> = {
    StockReceived: (payload) => {
      const { sku, quantity } = stockReceived.parse(payload);
      return [writes.addStock(sku, quantity)];
    },
    OrderPlaced: (payload) => {
      const placed = order.parse(payload);
      return [
        writes.takeStock(placed.sku, placed.quantity),
        writes.createOrder(placed),
        writes.addToBalance(placed.customerId, -placed.amountCents),
      ];
    },
    PaymentCaptured: (payload) => {
      const payment = paymentCaptured.parse(payload);
      return [writes.markPaid(payment), writes.addToBalance(payment.customerId, payment.amountCents)];
    },
    OrderCancelled: (payload) => {
      const cancelled = order.parse(payload);
      return [
        writes.markCancelled(cancelled),
        writes.addStock(cancelled.sku, cancelled.quantity),
        writes.addToBalance(cancelled.customerId, cancelled.amountCents),
      ];
    },
  };

  return async (event: ShopEvent): Promise<void> => {
    if (event.type === 'SendNotification') {
      await notify(settings.notificationUrl, event.key, sendNotification.parse(event.payload));
      return;
    }
    const plan = Object.hasOwn(ledgerPlans, event.type) ? ledgerPlans[event.type] : undefined;
    if (!plan) throw new UnknownShopEventError(`no handler for events of type "${event.type}"`);
    const planned = plan(event.payload);
    const [single] = planned;
    if (planned.length === 1 && single?.Update) await documents.send(new UpdateCommand(single.Update));
    else await documents.send(new TransactWriteCommand({ TransactItems: planned }));
  };
}

async function notify(url: string, key: string, notification: z.infer<typeof sendNotification>) {
  const response = await fetch(url, {
    method: 'POST',
    headers: { 'Content-Type': 'application/json', 'Idempotency-Key': key },
    body: JSON.stringify(notification),
  });
  if (!response.ok) throw new Error(`the notification gateway answered ${response.status}`);
}
