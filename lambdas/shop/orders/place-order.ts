import { NonRetryableError } from 'oncely/idempotency';
import { type Outbox, OutboxWriteCanceledError } from 'oncely/outbox';
import * as z from 'zod/mini';
import '../shared/zod-english.js';

/** What the orders API hands the PlaceOrder function, as an API backend would get it. */
export interface PlaceOrderRequest {
  orderId: string;
  customerId: string;
  sku: string;
  quantity: number;
  amountCents: number;
}

export interface PlaceOrderResponse {
  orderId: string;
  /** The OrderPlaced event's key: the consumer applies it once, whatever the relay does. */
  eventKey: string;
}

const id = z.string().check(z.minLength(1), z.maxLength(100));
const count = z.int().check(z.positive());
const requestSchema = z.strictObject({
  orderId: id,
  customerId: id,
  sku: id,
  quantity: count,
  amountCents: count,
});

/** The request is not an order. */
export class InvalidOrderError extends NonRetryableError {
  static override readonly errorName: string = 'InvalidOrderError';
}

/** An order with this id was placed before: it is not placed again, and no event is published. */
export class OrderAlreadyPlacedError extends NonRetryableError {
  static override readonly errorName: string = 'OrderAlreadyPlacedError';
}

/** The order's item in the orders table (the outbox shares the table, in a key space of its own). */
export const orderKey = (orderId: string) => ({ pk: `order#${orderId}`, sk: 'order' });

/** The OrderPlaced event's key: one order, one event, however often the call is retried. */
export const orderPlacedKey = (orderId: string) => `placed-${orderId}`;

/**
 * The orders service (DESIGN §9): the order and its OrderPlaced event commit in one transaction
 * through the outbox. If the order exists the transaction is canceled: nothing is written and
 * nothing is published. The event's group is the customer, as for the shop's other events.
 */
export function createPlaceOrderHandler(options: {
  outbox: Outbox;
  ordersTableName: string;
  now?: () => Date;
}) {
  const now = options.now ?? (() => new Date());
  return async (event: unknown): Promise<PlaceOrderResponse> => {
    const parsed = requestSchema.safeParse(event);
    if (!parsed.success) {
      const problems = parsed.error.issues.map(
        (issue) => `${issue.path.join('.') || 'request'}: ${issue.message}`,
      );
      throw new InvalidOrderError(`not an order: ${problems.join('; ')}`);
    }
    const order = parsed.data;
    const eventKey = orderPlacedKey(order.orderId);
    try {
      await options.outbox.write({
        writes: [
          {
            Put: {
              TableName: options.ordersTableName,
              Item: { ...orderKey(order.orderId), ...order, status: 'PLACED', placedAt: now().toISOString() },
              ConditionExpression: 'attribute_not_exists(pk)',
            },
          },
        ],
        messages: [{ type: 'OrderPlaced', groupId: order.customerId, key: eventKey, payload: order }],
      });
    } catch (error) {
      // The order's condition, or (an order deleted since) its event's key: placed before either way.
      if (
        error instanceof OutboxWriteCanceledError &&
        error.failures.every((f) => f.code === 'ConditionalCheckFailed')
      ) {
        throw new OrderAlreadyPlacedError(
          `order ${order.orderId} was placed before; nothing was written or published`,
        );
      }
      throw error;
    }
    return { orderId: order.orderId, eventKey };
  };
}
