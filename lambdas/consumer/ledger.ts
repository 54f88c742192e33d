import { z } from 'zod';
import { type ConsumerOperation, transactionalOperation } from '../runtime/consumer';
import { CompletedRecordCache, type TransactionWrite } from '../runtime/idempotency';

/**
 * The ledger: stock per SKU, a balance per customer (charges negative, payments positive) and
 * orders, in one table keyed by `id`. Events change it in transactional mode: their writes and
 * their idempotency record commit together, so each event applies exactly once.
 */
export const LEDGER_NAMESPACE = 'ledger';

export const ledgerItemId = {
  stock: (sku: string) => `stock#${sku}`,
  account: (customerId: string) => `account#${customerId}`,
  order: (orderId: string) => `order#${orderId}`,
};

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

const id = z.string().min(1).max(100);
const count = z.int().positive();

const stockReceivedSchema = z.object({ sku: id, quantity: count });
const orderSchema = z.object({
  orderId: id,
  customerId: id,
  sku: id,
  quantity: count,
  amountCents: count,
});
const paymentCapturedSchema = z.object({ orderId: id, customerId: id, amountCents: count });

type Order = z.infer<typeof orderSchema>;
type PaymentCaptured = z.infer<typeof paymentCapturedSchema>;

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

/** The ledger's writes, in DynamoDBDocumentClient's format; conditions carry the business rules. */
function ledgerWrites(TableName: string) {
  return {
    addStock: (sku: string, quantity: number): TransactionWrite => ({
      Update: {
        TableName,
        Key: { id: ledgerItemId.stock(sku) },
        UpdateExpression: 'ADD available :quantity',
        ExpressionAttributeValues: { ':quantity': quantity },
      },
    }),
    takeStock: (sku: string, quantity: number): TransactionWrite => ({
      Update: {
        TableName,
        Key: { id: ledgerItemId.stock(sku) },
        UpdateExpression: 'SET available = available - :quantity',
        ConditionExpression: 'available >= :quantity',
        ExpressionAttributeValues: { ':quantity': quantity },
      },
    }),
    addToBalance: (customerId: string, cents: number): TransactionWrite => ({
      Update: {
        TableName,
        Key: { id: ledgerItemId.account(customerId) },
        UpdateExpression: 'ADD balanceCents :cents',
        ExpressionAttributeValues: { ':cents': cents },
      },
    }),
    createOrder: (order: Order): TransactionWrite => ({
      Put: {
        TableName,
        Item: { id: ledgerItemId.order(order.orderId), status: 'PLACED', ...withoutOrderId(order) },
        ConditionExpression: 'attribute_not_exists(id)',
      },
    }),
    markPaid: (payment: PaymentCaptured): TransactionWrite => ({
      Update: {
        TableName,
        Key: { id: ledgerItemId.order(payment.orderId) },
        UpdateExpression: 'SET #status = :paid',
        ConditionExpression: '#status = :placed AND customerId = :customerId AND amountCents = :amountCents',
        ExpressionAttributeNames: { '#status': 'status' },
        ExpressionAttributeValues: {
          ':paid': 'PAID',
          ':placed': 'PLACED',
          ':customerId': payment.customerId,
          ':amountCents': payment.amountCents,
        },
      },
    }),
    markCancelled: (order: Order): TransactionWrite => ({
      Update: {
        TableName,
        Key: { id: ledgerItemId.order(order.orderId) },
        UpdateExpression: 'SET #status = :cancelled',
        ConditionExpression:
          '#status = :placed AND customerId = :customerId AND sku = :sku AND quantity = :quantity AND amountCents = :amountCents',
        ExpressionAttributeNames: { '#status': 'status' },
        ExpressionAttributeValues: {
          ':cancelled': 'CANCELLED',
          ':placed': 'PLACED',
          ':customerId': order.customerId,
          ':sku': order.sku,
          ':quantity': order.quantity,
          ':amountCents': order.amountCents,
        },
      },
    }),
  };
}

function withoutOrderId({ orderId: _orderId, ...rest }: Order) {
  return rest;
}
