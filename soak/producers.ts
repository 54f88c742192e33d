import type { Pacer } from '../harness/pacer.js';
import type { PublishResult } from '../lambdas/client/publish.js';
import type { PlaceOrderRequest } from '../lambdas/shop/orders/place-order.js';
import type { SoakMessage } from './soak-workload.js';

/** What the producers did, for the checks and the latency figures. */
export class ProducerLog {
  /** When each key's first publish (or PlaceOrder call) started, epoch ms. */
  readonly publishedAt = new Map<string, number>();
  /** Keys the publisher answered `sent` for. */
  readonly sent = new Set<string>();
  /** Keys sent again straight to the queue with a fresh deduplication id, as after SQS's window. */
  readonly late = new Set<string>();
  /** Messages published a second time at once (SQS's deduplication or the consumer's record drops them). */
  republished = 0;
  /** Orders placed a second time and refused, as they must be. */
  repeatsRefused = 0;
  /** Orders placed a second time and not refused: each is a violation. */
  repeatsAccepted: string[] = [];
  /** PlaceOrder calls that failed and were tried again. */
  placeRetries = 0;
  /** Orders still failing after every try: their events are not accepted. */
  placeFailures: string[] = [];

  mark(keys: readonly string[]) {
    const now = Date.now();
    for (const key of keys) if (!this.publishedAt.has(key)) this.publishedAt.set(key, now);
  }
}

export interface ClientProducerOptions {
  groups: { groupId: string; messages: SoakMessage[] }[];
  publish: (messages: SoakMessage[]) => Promise<PublishResult>;
  /** Sends messages straight to the queue with a fresh deduplication id. */
  resendLate: (messages: SoakMessage[]) => Promise<void>;
  pacer: Pacer;
  log: ProducerLog;
  /** Customers publishing at any time: each chunk takes one message from each in turn. */
  activeGroups: number;
  /** Messages per publish call. */
  chunk: number;
  /** One chunk in this many is published twice. */
  republishEvery: number;
  /** One message in this many is sent again as after the window, a chunk later. */
  lateEvery: number;
}

/**
 * The client's services: `activeGroups` customers at a time publish their events in order through
 * the publisher, a chunk at a time; a finished customer's place goes to the next. Some chunks go
 * twice at once, some messages again after SQS's deduplication window.
 */
export async function runClientProducer(options: ClientProducerOptions): Promise<void> {
  const waiting = [...options.groups];
  const active = waiting.splice(0, options.activeGroups).map((group) => ({ group, next: 0 }));
  let chunks = 0;
  let count = 0;
  let late: SoakMessage[] = [];
  while (active.length > 0) {
    const chunk: SoakMessage[] = [];
    // One message of a group per chunk: a group's next goes in the next chunk, after this one.
    for (let i = 0; i < active.length && chunk.length < options.chunk; ) {
      const slot = active[i] as (typeof active)[number];
      const message = slot.group.messages[slot.next++];
      if (message) chunk.push(message);
      if (slot.next >= slot.group.messages.length) {
        const replacement = waiting.shift();
        if (replacement) active[i] = { group: replacement, next: 0 };
        else active.splice(i, 1);
      } else i++;
    }
    await options.pacer.take(chunk.length);
    options.log.mark(chunk.map((message) => message.key));
    const result = await publishWithRetry(options.publish, chunk);
    for (const outcome of result.results) if (outcome.status === 'sent') options.log.sent.add(outcome.key);
    if (++chunks % options.republishEvery === 0) {
      await publishWithRetry(options.publish, chunk);
      options.log.republished += chunk.length;
    }
    if (late.length > 0) {
      await options.resendLate(late);
      for (const message of late) options.log.late.add(message.key);
    }
    late = chunk.filter(() => ++count % options.lateEvery === 0);
  }
  if (late.length > 0) {
    await options.resendLate(late);
    for (const message of late) options.log.late.add(message.key);
  }
}

/** How long a producer keeps calling again a publish that fails, before the run fails with it. */
const PUBLISH_RETRY_MS = 120_000;

/**
 * The publish call itself may fail (its Invoke, under faults, or the publisher's own SQS request
 * timing out on a busy machine): the same chunk again is safe. Tried again for a time, not a
 * number of times, as a busy machine can fail several calls in a row.
 */
async function publishWithRetry(
  publish: ClientProducerOptions['publish'],
  messages: SoakMessage[],
): Promise<PublishResult> {
  const deadline = Date.now() + PUBLISH_RETRY_MS;
  for (let attempt = 1; ; attempt++) {
    try {
      return await publish(messages);
    } catch (error) {
      if (Date.now() > deadline) throw error;
      await new Promise((resolve) => setTimeout(resolve, Math.min(200 * attempt, 2_000)));
    }
  }
}

export type PlaceOrder = (
  order: PlaceOrderRequest,
) => Promise<{ placed: true } | { placed: false; errorType: string; errorMessage: string }>;

export interface OutboxProducerOptions {
  customers: { groupId: string; orders: PlaceOrderRequest[] }[];
  placeOrder: PlaceOrder;
  eventKey: (orderId: string) => string;
  pacer: Pacer;
  log: ProducerLog;
  /** Customers placing orders at once, each its own orders in turn. */
  concurrency: number;
  /** One order in this many is placed a second time, which must be refused. */
  repeatEvery: number;
}

const ALREADY_PLACED = 'OrderAlreadyPlacedError';
const PLACE_ATTEMPTS = 8;

/**
 * The orders service's callers: `concurrency` customers at a time, each placing its orders one
 * after another through PlaceOrder, whose outbox publishes each OrderPlaced. A failed call is
 * tried again.
 */
export async function runOutboxProducer(options: OutboxProducerOptions): Promise<void> {
  let next = 0;
  let count = 0;
  const worker = async () => {
    for (let customer = options.customers[next++]; customer; customer = options.customers[next++]) {
      for (const order of customer.orders) {
        await options.pacer.take(1);
        options.log.mark([options.eventKey(order.orderId)]);
        await placeWithRetry(options, order);
        if (++count % options.repeatEvery !== 0) continue;
        const repeat = await options.placeOrder(order);
        if (!repeat.placed && repeat.errorType === ALREADY_PLACED) options.log.repeatsRefused++;
        else options.log.repeatsAccepted.push(order.orderId);
      }
    }
  };
  await Promise.all(Array.from({ length: options.concurrency }, worker));
}

async function placeWithRetry(options: OutboxProducerOptions, order: PlaceOrderRequest): Promise<void> {
  for (let attempt = 1; attempt <= PLACE_ATTEMPTS; attempt++) {
    const outcome = await options.placeOrder(order).catch((error: Error) => ({
      placed: false as const,
      errorType: error.name,
      errorMessage: error.message,
    }));
    // Order ids are new to the run: refused as already placed, an earlier try (or the SDK's retry
    // of this one's transaction, its answer lost) committed it.
    if (outcome.placed || outcome.errorType === ALREADY_PLACED) return;
    options.log.placeRetries++;
    await new Promise((resolve) => setTimeout(resolve, 100 * attempt));
  }
  options.log.placeFailures.push(order.orderId);
}
