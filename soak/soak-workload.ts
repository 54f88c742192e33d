import type { OutgoingMessage } from '../lambdas/common/envelope.js';
import { orderPlacedKey, type PlaceOrderRequest } from '../lambdas/shop/orders/place-order.js';

/** The soak's messages all carry their key: the checks find each one by it. */
export type SoakMessage = OutgoingMessage & { key: string };

/** Units of each SKU the stock load brings: far more than the soak's orders take. */
const INITIAL_STOCK = 10_000_000;
const SKUS = 5;
/** What {@link clientMessages} publishes per order, on average. */
const MESSAGES_PER_CLIENT_ORDER = 2.2;

export interface SoakWorkloadSize {
  /** Messages the producers publish in all, at least: the stock load, poison and duplicates come on top. */
  messages: number;
  /** Message groups (customers); the warehouse's group of the stock load comes on top. */
  groups: number;
  /** The share of groups whose orders the orders service places through its outbox. */
  outboxShare: number;
  /** One message in this many of the client's is poison: an unknown type, or an order beyond the stock. */
  poisonEvery: number;
}

/**
 * One customer: its messages in publish order, from one producer. The outbox's are the OrderPlaced
 * events its orders' placements write.
 */
export type SoakGroup =
  | { producer: 'client'; groupId: string; messages: SoakMessage[] }
  | { producer: 'outbox'; groupId: string; orders: PlaceOrderRequest[]; messages: SoakMessage[] };

export interface SoakWorkload {
  stock: SoakMessage[];
  groups: SoakGroup[];
  /** Keys of the poison messages: each must end in the DLQ. */
  poison: Set<string>;
}

/**
 * The soak's shop: a stock load, then customers each in its own message group. The client's
 * customers publish orders, payments, cancellations, receipts (at-most-once) and reminders
 * (at-least-once); the outbox's place orders through the orders service. Built up front from the
 * size alone, so that the checks know every message the producers were given.
 */
export function buildSoakWorkload(size: SoakWorkloadSize): SoakWorkload {
  const skuIds = Array.from({ length: SKUS }, (_, i) => `sku-${i}`);
  const stock = skuIds.map((sku) => ({
    type: 'StockReceived',
    groupId: 'warehouse',
    key: `stock-${sku}`,
    payload: { sku, quantity: INITIAL_STOCK },
  }));
  const outboxGroups = Math.round(size.groups * size.outboxShare);
  // An outbox customer's order is one message; a client one's 2.2 (clientMessages).
  const messagesPerOrder = outboxGroups + (size.groups - outboxGroups) * MESSAGES_PER_CLIENT_ORDER;
  const ordersPerCustomer = Math.max(1, Math.ceil(size.messages / messagesPerOrder));
  const groups: SoakGroup[] = [];
  const poison = new Set<string>();
  let clientCount = 0;
  for (let c = 0; c < size.groups; c++) {
    const groupId = `customer-${c}`;
    const orders = Array.from({ length: ordersPerCustomer }, (_, i) => {
      const sku = skuIds[(c * 7 + i) % SKUS] as string;
      const quantity = 1 + ((c + i) % 3);
      return {
        orderId: `o-${c}-${i}`,
        customerId: groupId,
        sku,
        quantity,
        amountCents: quantity * (150 + 25 * (i % SKUS)),
      };
    });
    // Spread the outbox's customers evenly among the client's.
    if (Math.floor((c + 1) * size.outboxShare) > Math.floor(c * size.outboxShare)) {
      const messages = orders.map((order): SoakMessage => {
        const key = orderPlacedKey(order.orderId);
        return { type: 'OrderPlaced', groupId, key, payload: order };
      });
      groups.push({ producer: 'outbox', groupId, orders, messages });
      continue;
    }
    const messages: SoakMessage[] = [];
    for (const message of clientMessages(orders)) {
      if (++clientCount % size.poisonEvery === 0) {
        const bad = poisonMessage(groupId, clientCount);
        messages.push(bad);
        poison.add(bad.key);
      }
      messages.push(message);
    }
    groups.push({ producer: 'client', groupId, messages });
  }
  return { stock, groups, poison };
}

/** A customer's events, as in harness/workload.ts, with a reminder for each order left unpaid. */
function clientMessages(orders: PlaceOrderRequest[]): SoakMessage[] {
  const messages: SoakMessage[] = [];
  orders.forEach((order, i) => {
    const { orderId, customerId: groupId, amountCents } = order;
    const email = (type: string, key: string, subject: string) =>
      messages.push({
        type,
        groupId,
        key,
        payload: { to: `${groupId}@example.com`, subject, body: `${orderId}: ${amountCents} cents.` },
      });
    messages.push({ type: 'OrderPlaced', groupId, key: orderPlacedKey(orderId), payload: order });
    if (i % 5 === 0) {
      messages.push({ type: 'OrderCancelled', groupId, key: `cancelled-${orderId}`, payload: order });
    } else if (i % 2 === 0) {
      messages.push({
        type: 'PaymentCaptured',
        groupId,
        key: `paid-${orderId}`,
        payload: { orderId, customerId: groupId, amountCents },
      });
      if (i % 4 === 0) email('SendNotification', `receipt-${orderId}`, `Your receipt for ${orderId}`);
    } else {
      email('SendReminder', `reminder-${orderId}`, `${orderId} awaits your payment`);
    }
  });
  return messages;
}

/** A message no retry can fix: a type the consumer does not know, or an order beyond any stock. */
function poisonMessage(groupId: string, n: number): SoakMessage {
  if (n % 2 === 0) return { type: 'OrderShipped', groupId, key: `shipped-${groupId}-${n}`, payload: { n } };
  const orderId = `huge-${groupId}-${n}`;
  return {
    type: 'OrderPlaced',
    groupId,
    key: orderPlacedKey(orderId),
    payload: { orderId, customerId: groupId, sku: 'sku-0', quantity: 10 * INITIAL_STOCK, amountCents: 1 },
  };
}
