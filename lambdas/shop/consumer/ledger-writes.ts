import type { TransactionWrite } from 'oncely/idempotency';

/**
 * The ledger's items and writes, apart from how they are made idempotent: the example consumer
 * commits them in transactional mode (ledger.ts); the benchmarks' consumers without Oncely send the
 * same writes themselves. Type-only imports, so bundling them brings in nothing of Oncely's runtime.
 */
export const ledgerItemId = {
  stock: (sku: string) => `stock#${sku}`,
  account: (customerId: string) => `account#${customerId}`,
  order: (orderId: string) => `order#${orderId}`,
};

/** An order, as placed and as cancelled. */
export interface OrderLine {
  orderId: string;
  customerId: string;
  sku: string;
  quantity: number;
  amountCents: number;
}

/** A captured payment for an order. */
export interface Payment {
  orderId: string;
  customerId: string;
  amountCents: number;
}

/** The ledger's writes, in DynamoDBDocumentClient's format; conditions carry the business rules. */
export function ledgerWrites(TableName: string) {
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
    createOrder: (order: OrderLine): TransactionWrite => ({
      Put: {
        TableName,
        Item: { id: ledgerItemId.order(order.orderId), status: 'PLACED', ...withoutOrderId(order) },
        ConditionExpression: 'attribute_not_exists(id)',
      },
    }),
    markPaid: (payment: Payment): TransactionWrite => ({
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
    markCancelled: (order: OrderLine): TransactionWrite => ({
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

function withoutOrderId({ orderId: _orderId, ...rest }: OrderLine) {
  return rest;
}
