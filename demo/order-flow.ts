import type { DynamoDBClient } from '@aws-sdk/client-dynamodb';
import type { LambdaClient } from '@aws-sdk/client-lambda';
import type { OutboxResources } from 'oncely/cdk';
import type { OutgoingMessage } from 'oncely/client';
import { countPending, readPlacedOrder } from '../harness/outbox-snapshot.js';
import { invokePlaceOrder, type PlaceOrderOutcome, placeOrders } from '../harness/place-orders.js';
import { waitFor } from '../harness/wait-for.js';
import type { PlaceOrderRequest } from '../lambdas/shop/orders/place-order.js';

/**
 * Customers whose orders are placed at once: a few API calls in flight, as from a few users. Each
 * call waits on a DynamoDB transaction, so fewer would leave the sandbox idle between them.
 */
export const PLACE_CONCURRENCY = 8;
/** How long the relay (or the sweeper) may take to publish every placed order's event. */
export const DRAIN_TIMEOUT_MS = 30_000;

export interface OrderFlow {
  /** Each placement's outcome. */
  outcomes: PlaceOrderOutcome[];
  placedAfterMs: number;
  /** When the outbox had nothing pending; undefined if it still had after the bound. */
  drainedAfterMs?: number;
  /** An order id placed a second time, and whether its order and event items stayed as they were. */
  repeat: { outcome: PlaceOrderOutcome; unchanged: boolean };
}

/**
 * The shop's two producers: the orders service places every OrderPlaced (its payload is the order),
 * each customer's orders in their order; the client publishes the rest.
 */
export function splitByProducer(messages: OutgoingMessage[]): {
  orders: PlaceOrderRequest[][];
  rest: OutgoingMessage[];
} {
  const orders = new Map<string, PlaceOrderRequest[]>();
  const rest: OutgoingMessage[] = [];
  for (const message of messages) {
    if (message.type !== 'OrderPlaced') {
      rest.push(message);
      continue;
    }
    const chain = orders.get(message.groupId) ?? [];
    chain.push(message.payload as PlaceOrderRequest);
    orders.set(message.groupId, chain);
  }
  return { orders: [...orders.values()], rest };
}

/**
 * The orders service at work: every order placed through PlaceOrder, then a wait until the outbox
 * has published them all, then one order id placed again, which must be refused.
 */
export async function runOrderFlow(options: {
  lambda: LambdaClient;
  dynamodb: DynamoDBClient;
  functionName: string;
  outbox: OutboxResources;
  orders: PlaceOrderRequest[][];
  progress: (line: string) => void;
}): Promise<OrderFlow> {
  const { lambda, dynamodb, functionName, outbox } = options;
  const started = Date.now();
  const total = options.orders.reduce((n, chain) => n + chain.length, 0);
  let placed = 0;
  const outcomes = await placeOrders(lambda, functionName, options.orders, PLACE_CONCURRENCY, () =>
    options.progress(`   … ${++placed} of ${total} orders placed`),
  );
  const placedAfterMs = Date.now() - started;

  let drainedAfterMs: number | undefined;
  await waitFor(async () => {
    const pending = await countPending(dynamodb, outbox);
    options.progress(`   … ${pending} OrderPlaced events pending in the outbox`);
    return pending === 0;
  }, DRAIN_TIMEOUT_MS)
    .then(() => {
      drainedAfterMs = Date.now() - started;
    })
    .catch(() => undefined);

  // A client retrying a call it thinks failed: the same request again.
  const first = options.orders[0]?.[0];
  if (!first) throw new Error('the workload has no orders');
  const before = await readPlacedOrder(dynamodb, outbox, first.orderId);
  const outcome = await invokePlaceOrder(lambda, functionName, first);
  const unchanged = (await readPlacedOrder(dynamodb, outbox, first.orderId)) === before;
  return { outcomes, placedAfterMs, drainedAfterMs, repeat: { outcome, unchanged } };
}
