import { type ConsumerOperation, transactionalOperation } from 'oncely/consumer';
import { CompletedRecordCache } from 'oncely/idempotency';
import * as z from 'zod/mini';
import { ledgerWrites } from './ledger-writes.js';
import '../shared/zod-english.js';

export { ledgerItemId } from './ledger-writes.js';

/**
 * The ledger: stock per SKU, a balance per customer (charges negative, payments positive) and
 * orders, in one table keyed by `id`. Events change it in transactional mode: their writes and
 * their idempotency record commit together, so each event applies exactly once.
 */
export const LEDGER_NAMESPACE = 'ledger';

/** A stock item: `available` never goes below zero. */
export interface StockItem {
  id: string;
  available: number;
}

export interface AccountItem {
  id: string;
  balanceCents: number;
}

export interface OrderItem {
  id: string;
  status: 'PLACED' | 'PAID' | 'CANCELLED';
  customerId: string;
  sku: string;
  quantity: number;
  amountCents: number;
}

const id = z.string().check(z.minLength(1), z.maxLength(100));
const count = z.int().check(z.positive());

const stockReceivedSchema = z.object({ sku: id, quantity: count });
const orderSchema = z.object({
  orderId: id,
  customerId: id,
  sku: id,
  quantity: count,
  amountCents: count,
});
const paymentCapturedSchema = z.object({ orderId: id, customerId: id, amountCents: count });

/** The ledger's event types, each with its operation. */
export function ledgerOperations(tableName: string): Record<string, ConsumerOperation> {
  // One ledger, one key space: its event types share the namespace and the cache of completed keys.
  const common = { namespace: LEDGER_NAMESPACE, cache: new CompletedRecordCache() };
  const writes = ledgerWrites(tableName);
  return {
    StockReceived: transactionalOperation({
      ...common,
      payload: stockReceivedSchema,
      plan: ({ payload }) => ({ writes: [writes.addStock(payload.sku, payload.quantity)] }),
    }),
    OrderPlaced: transactionalOperation({
      ...common,
      payload: orderSchema,
      plan: ({ payload }) => ({
        writes: [
          writes.takeStock(payload.sku, payload.quantity),
          writes.createOrder(payload),
          writes.addToBalance(payload.customerId, -payload.amountCents),
        ],
      }),
      describeViolation: (write, { payload }) => {
        if (write === 0)
          return `stock never goes below zero: fewer than ${payload.quantity} of ${payload.sku} are left`;
        if (write === 1) return `order ${payload.orderId} was placed already`;
        return undefined;
      },
    }),
    PaymentCaptured: transactionalOperation({
      ...common,
      payload: paymentCapturedSchema,
      plan: ({ payload }) => ({
        writes: [writes.markPaid(payload), writes.addToBalance(payload.customerId, payload.amountCents)],
      }),
      describeViolation: (write, { payload }) =>
        write === 0
          ? `order ${payload.orderId} is not an unpaid order of ${payload.customerId} for ${payload.amountCents} cents`
          : undefined,
    }),
    OrderCancelled: transactionalOperation({
      ...common,
      payload: orderSchema,
      plan: ({ payload }) => ({
        writes: [
          writes.markCancelled(payload),
          writes.addStock(payload.sku, payload.quantity),
          writes.addToBalance(payload.customerId, payload.amountCents),
        ],
      }),
      describeViolation: (write, { payload }) =>
        write === 0
          ? `order ${payload.orderId} is not an unpaid order matching this cancellation`
          : undefined,
    }),
  };
}
