import type { OutgoingMessage } from 'oncely/client';
import { BusinessRuleViolationError, UnknownMessageTypeError } from 'oncely/consumer';

/** A shop's events: stock arrivals, then per customer orders that are paid, cancelled or left open. */
export interface Workload {
  /** StockReceived events; published and applied before any order, as an initial stock load. */
  stock: OutgoingMessage[];
  /** Every customer's events in order, interleaved across customers (one message group each). */
  stream: OutgoingMessage[];
  /** Keys of the receipts the e-mail gateway should see. */
  notificationKeys: string[];
  /** Messages no retry can fix: an unknown type, an order beyond the stock. */
  poison: OutgoingMessage[];
  /**
   * Key → the DLQ reason (`ErrorName`) each poison message is meant to get. Nothing else in the
   * workload breaks a rule: every order fits the stock load, and every payment or cancellation
   * follows its order in its customer's group.
   */
  poisonReasons: ReadonlyMap<string, string>;
  /** The ledger computed independently from the distinct events. */
  expected: { stock: Map<string, number>; balances: Map<string, number> };
}

export interface WorkloadSize {
  customers: number;
  ordersPerCustomer: number;
  skus: number;
}

const INITIAL_STOCK = 100_000;

export function buildWorkload({ customers, ordersPerCustomer, skus }: WorkloadSize): Workload {
  const skuIds = Array.from({ length: skus }, (_, i) => `sku-${i}`);
  const price = (sku: string) => 150 + 25 * Number(sku.slice(4));
  const stock = skuIds.map((sku) => ({
    type: 'StockReceived',
    groupId: 'warehouse',
    key: `stock-${sku}`,
    payload: { sku, quantity: INITIAL_STOCK },
  }));
  const expectedStock = new Map(skuIds.map((sku) => [sku, INITIAL_STOCK]));
  const balances = new Map<string, number>();
  const perCustomer: OutgoingMessage[][] = [];
  const notificationKeys: string[] = [];

  for (let c = 0; c < customers; c++) {
    const customerId = `customer-${c}`;
    const events: OutgoingMessage[] = [];
    let balance = 0;
    for (let i = 0; i < ordersPerCustomer; i++) {
      const orderId = `o-${c}-${i}`;
      const sku = skuIds[(c * 7 + i) % skus] as string;
      const quantity = 1 + ((c + i) % 3);
      const order = { orderId, customerId, sku, quantity, amountCents: quantity * price(sku) };
      const event = (type: string, key: string, payload: object) =>
        events.push({ type, groupId: customerId, key, payload });
      event('OrderPlaced', `placed-${orderId}`, order);
      expectedStock.set(sku, (expectedStock.get(sku) ?? 0) - quantity);
      balance -= order.amountCents;
      if (i % 5 === 0) {
        event('OrderCancelled', `cancelled-${orderId}`, order);
        expectedStock.set(sku, (expectedStock.get(sku) ?? 0) + quantity);
        balance += order.amountCents;
      } else if (i % 2 === 0) {
        event('PaymentCaptured', `paid-${orderId}`, { orderId, customerId, amountCents: order.amountCents });
        balance += order.amountCents;
        if (i % 4 === 0) {
          const key = `receipt-${orderId}`;
          notificationKeys.push(key);
          event('SendNotification', key, {
            to: `${customerId}@example.com`,
            subject: `Your receipt for ${orderId}`,
            body: `We received ${order.amountCents} cents. Thank you!`,
          });
        }
      }
    }
    balances.set(customerId, balance);
    perCustomer.push(events);
  }

  const poison = [
    { type: 'OrderShipped', groupId: 'customer-1', key: 'shipped-o-1-0', payload: { orderId: 'o-1-0' } },
    {
      type: 'OrderPlaced',
      groupId: 'customer-2',
      key: 'placed-o-2-huge',
      payload: {
        orderId: 'o-2-huge',
        customerId: 'customer-2',
        sku: 'sku-0',
        quantity: 10 * INITIAL_STOCK,
        amountCents: 1,
      },
    },
  ];
  return {
    stock,
    stream: interleave(perCustomer),
    notificationKeys,
    poison,
    poisonReasons: new Map([
      ['shipped-o-1-0', UnknownMessageTypeError.errorName],
      ['placed-o-2-huge', BusinessRuleViolationError.errorName],
    ]),
    expected: { stock: expectedStock, balances },
  };
}

/** Round-robin over the customers, keeping each customer's own order. */
function interleave(streams: OutgoingMessage[][]): OutgoingMessage[] {
  const result: OutgoingMessage[] = [];
  for (let i = 0; result.length < streams.reduce((n, s) => n + s.length, 0); i++) {
    for (const stream of streams) {
      const next = stream[i];
      if (next) result.push(next);
    }
  }
  return result;
}
