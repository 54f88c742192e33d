import type { DynamoDBClient } from '@aws-sdk/client-dynamodb';
import type { SQSClient } from '@aws-sdk/client-sqs';
import type { Context, SQSBatchResponse, SQSEvent } from 'aws-lambda';
// The store the shop's consumer takes: the package's, as the shop imports it.
import { DynamoDBIdempotencyStore } from 'oncely/idempotency';
import { type Spread, spreadOf } from '../harness/statistics.js';
import type { IdempotencyMode } from '../lambdas/idempotency/index.js';
import type { PublishMessage } from '../lambdas/publisher/contract.js';
import { createShopHandler } from '../lambdas/shop/consumer/consumer.js';
import { DEFAULT_NOTIFICATION_TIMEOUT_MS } from '../lambdas/shop/consumer/environment.js';
import { countRequests } from '../sandbox/request-counter.js';
import { type BenchEndpoints, dynamoDbClient, sqsClient } from './clients.js';
import { createLeaseConsumerHandler } from './consumers/lease-consumer.js';
import { createPowertoolsConsumerHandler } from './consumers/powertools-consumer.js';
import { invocationContext, silentTelemetry } from './invocation.js';
import { notificationMessages, startNotificationGateway } from './notification-events.js';
import { createFifoQueue, deleteQueues, newIdempotencyTable, newLedgerTable } from './resources.js';
import { rotate } from './rotate.js';
import { fifoEvent, stockMessages } from './stock-events.js';
import { sumWriteUnits } from './write-units.js';

export const BATCH_CONSUMERS = {
  transactional: 'Oncely: the example consumer (transactional mode)',
  lease: 'Oncely: fifoBatch in lease mode',
  powertools: 'Powertools: SqsFifoPartialProcessorAsync + makeIdempotent',
} as const;
export type BatchConsumer = keyof typeof BATCH_CONSUMERS;

/**
 * The consumers of (2)'s second workload, SendNotification: lease mode in both of its modes against
 * Powertools, each with the same effect (one POST to a loopback gateway, no DynamoDB request).
 */
export const NOTIFICATION_CONSUMERS = {
  leaseAtLeastOnce: 'Oncely: fifoBatch in lease mode, at-least-once',
  leaseAtMostOnce: 'Oncely: fifoBatch in lease mode, at-most-once',
  powertools: 'Powertools: SqsFifoPartialProcessorAsync + makeIdempotent',
} as const;
export type NotificationConsumer = keyof typeof NOTIFICATION_CONSUMERS;

/** Issue 13's shape, one group of ten, and ten groups beside it. */
export const NOTIFICATION_GROUP_COUNTS = [1, 10];

export interface BatchLatencyOptions {
  groupCounts: readonly number[];
  /** Timed batches per consumer and group count. */
  batches: number;
  /** Untimed batches first, so that connections, caches and the JIT are warm. */
  warmupBatches: number;
  /** Added to every DynamoDB request. */
  latencyMs: number;
  onProgress?: (line: string) => void;
}

export interface BatchLatency<C extends string = BatchConsumer> {
  consumer: C;
  groups: number;
  /** Milliseconds from invocation to the partial batch response. */
  latency: Spread;
  requestsPerRecord: number;
  /** Write units DynamoDB reported per record (see write-units.ts): a transaction's items count twice. */
  writeUnitsPerRecord: number;
}

export type NotificationLatency = BatchLatency<NotificationConsumer>;

export type BatchHandler = (event: SQSEvent, context: Context) => Promise<SQSBatchResponse>;

export const BATCH_SIZE = 10;
/** The records carry an ARN as Lambda's event source mapping sets it; no consumer reads it. */
export const QUEUE_ARN = 'arn:aws:sqs:us-east-1:123456789012:bench.fifo';

/**
 * (2) How long a 10-record FIFO batch of first deliveries takes, spread over 1 to 10 message groups,
 * each consumer invoked directly with the event Lambda would deliver. Every DynamoDB request is held
 * `latencyMs`, as an AWS round trip would; the consumers take turns, batch after batch, so that any
 * drift of the machine falls on all of them alike.
 */
export async function measureBatchLatency(
  endpoints: BenchEndpoints,
  options: BatchLatencyOptions,
): Promise<BatchLatency[]> {
  const sqs = sqsClient(endpoints);
  const consumers = Object.keys(BATCH_CONSUMERS) as BatchConsumer[];
  const clients = clientsFor(endpoints, consumers, options.latencyMs);
  const dlq = await createFifoQueue(sqs, {});
  try {
    const handlers = await buildConsumers(clients, sqs, dlq.url);
    return await timeConsumers(handlers, clients, stockMessages, options);
  } finally {
    await deleteQueues(sqs, [dlq]);
    sqs.destroy();
    for (const client of Object.values(clients)) client.destroy();
  }
}

/**
 * (2), second workload: the same batches of SendNotification, whose effect is one POST to a loopback
 * gateway and no DynamoDB request — so the batch's time is its idempotency round trips, which is
 * where lease mode's pipelining of a group shows (issue 13): its leases taken together, each
 * completion written while the next record runs (at-least-once) or naming the next record, which
 * lets it start (at-most-once). Every DynamoDB request is held `latencyMs`; the HTTP POST is not.
 */
export async function measureNotificationLatency(
  endpoints: BenchEndpoints,
  options: BatchLatencyOptions,
): Promise<NotificationLatency[]> {
  const batches = options.groupCounts.length * (options.warmupBatches + options.batches);
  return withNotificationConsumers(endpoints, options.latencyMs, batches, (handlers, clients) =>
    timeConsumers(handlers, clients, notificationMessages, options),
  );
}

/**
 * Runs `use` with (2)'s second workload's consumers, each on its own DynamoDB client whose requests
 * are held `latencyMs` (a number, or read at each request), then checks that the gateway got one
 * notification per record of the `batches` each consumer was given.
 */
export async function withNotificationConsumers<T>(
  endpoints: BenchEndpoints,
  latencyMs: number | (() => number),
  batches: number,
  use: (
    handlers: Record<NotificationConsumer, BatchHandler>,
    clients: Record<NotificationConsumer, DynamoDBClient>,
  ) => Promise<T>,
): Promise<T> {
  const sqs = sqsClient(endpoints);
  const consumers = Object.keys(NOTIFICATION_CONSUMERS) as NotificationConsumer[];
  const clients = clientsFor(endpoints, consumers, latencyMs);
  const [dlq, gateway] = await Promise.all([createFifoQueue(sqs, {}), startNotificationGateway()]);
  try {
    const settingsOf = async (client: DynamoDBClient) => ({
      idempotencyTableName: await newIdempotencyTable(client),
      // Nothing is written to the ledger: the workload has notifications only.
      ledgerTableName: 'unused',
      notificationUrl: gateway.url,
    });
    const lease = (mode: IdempotencyMode, client: DynamoDBClient) => async () =>
      createLeaseConsumerHandler({
        ...(await settingsOf(client)),
        mode,
        dynamodb: client,
        sqs,
        dlqUrl: dlq.url,
        ...silentTelemetry(),
      });
    const [leaseAtLeastOnce, leaseAtMostOnce, powertools] = await Promise.all([
      lease('at-least-once', clients.leaseAtLeastOnce)(),
      lease('at-most-once', clients.leaseAtMostOnce)(),
      settingsOf(clients.powertools).then((settings) =>
        createPowertoolsConsumerHandler({ ...settings, dynamodb: clients.powertools, ...silentTelemetry() }),
      ),
    ]);
    const result = await use({ leaseAtLeastOnce, leaseAtMostOnce, powertools }, clients);
    if (gateway.posts() !== consumers.length * batches * BATCH_SIZE) {
      throw new Error(`the gateway got ${gateway.posts()} notifications, not one per record`);
    }
    return result;
  } finally {
    await Promise.all([deleteQueues(sqs, [dlq]), gateway.stop()]);
    sqs.destroy();
    for (const client of Object.values<DynamoDBClient>(clients)) client.destroy();
  }
}

/** One DynamoDB client per consumer, each request held `latencyMs`: their requests are counted apart. */
export function clientsFor<C extends string>(
  endpoints: BenchEndpoints,
  consumers: readonly C[],
  latencyMs: number | (() => number),
): Record<C, DynamoDBClient> {
  return Object.fromEntries(
    consumers.map((consumer) => [consumer, dynamoDbClient(endpoints, latencyMs)]),
  ) as Record<C, DynamoDBClient>;
}

/**
 * Times every consumer on batches of `messages`, at each group count; the consumers take turns,
 * batch after batch, so that any drift of the machine falls on all of them alike.
 */
async function timeConsumers<C extends string>(
  handlers: Record<C, BatchHandler>,
  clients: Record<C, DynamoDBClient>,
  messages: (count: number, groups: number) => PublishMessage[],
  options: BatchLatencyOptions,
): Promise<BatchLatency<C>[]> {
  const consumers = Object.keys(handlers) as C[];
  const results: BatchLatency<C>[] = [];
  const counters = new Map(consumers.map((consumer) => [consumer, countRequests(clients[consumer])]));
  const units = new Map(consumers.map((consumer) => [consumer, sumWriteUnits(clients[consumer])]));
  for (const groups of options.groupCounts) {
    const samples = new Map<C, number[]>(consumers.map((consumer) => [consumer, []]));
    for (let round = 0; round < options.warmupBatches + options.batches; round++) {
      if (round === options.warmupBatches) {
        for (const counter of [...counters.values(), ...units.values()]) counter.reset();
      }
      for (const consumer of rotate(consumers, round)) {
        const elapsed = await timeBatch(handlers[consumer], messages(BATCH_SIZE, groups));
        if (round >= options.warmupBatches) samples.get(consumer)?.push(elapsed);
      }
    }
    for (const consumer of consumers) {
      results.push({
        consumer,
        groups,
        latency: spreadOf(samples.get(consumer) ?? []),
        requestsPerRecord: (counters.get(consumer)?.total() ?? 0) / (options.batches * BATCH_SIZE),
        writeUnitsPerRecord: (units.get(consumer)?.total() ?? 0) / (options.batches * BATCH_SIZE),
      });
    }
    options.onProgress?.(
      `${groups} group(s): ${results
        .filter((result) => result.groups === groups)
        .map((result) => `${result.consumer} ${result.latency.median.toFixed(1)} ms`)
        .join(', ')}`,
    );
  }
  return results;
}

/** The tables of a consumer of the StockReceived workload: its idempotency table and a ledger. */
export interface StockTables {
  idempotencyTableName: string;
  ledgerTableName: string;
  /** Never posted to: the workload has no notifications. */
  notificationUrl: string;
}

/** New tables for one consumer of the StockReceived workload, on `client`. */
export async function stockTables(client: DynamoDBClient): Promise<StockTables> {
  const [idempotencyTableName, ledgerTableName] = await Promise.all([
    newIdempotencyTable(client),
    newLedgerTable(client),
  ]);
  return { idempotencyTableName, ledgerTableName, notificationUrl: 'http://127.0.0.1:9/unused' };
}

/**
 * The shop's consumer (transactional mode) as deployed, but for its clients and its silent logger:
 * it publishes the metrics it makes itself, after each batch, as the others do with logMetrics.
 */
export function exampleConsumerHandler(
  client: DynamoDBClient,
  tables: StockTables,
  deadLetterQueue: { sqs: SQSClient; dlqUrl: string },
): BatchHandler {
  return createShopHandler(
    {
      ledgerTableName: tables.ledgerTableName,
      notificationUrl: tables.notificationUrl,
      notificationTimeoutMs: DEFAULT_NOTIFICATION_TIMEOUT_MS,
      notificationMode: 'at-most-once',
    },
    {
      store: new DynamoDBIdempotencyStore({ client, tableName: tables.idempotencyTableName }),
      deadLetterQueue: { client: deadLetterQueue.sqs, queueUrl: deadLetterQueue.dlqUrl },
      logger: silentTelemetry().logger,
    },
  );
}

async function buildConsumers(
  clients: Record<BatchConsumer, DynamoDBClient>,
  sqs: SQSClient,
  dlqUrl: string,
): Promise<Record<BatchConsumer, BatchHandler>> {
  const [transactional, lease, powertools] = await Promise.all([
    stockTables(clients.transactional),
    stockTables(clients.lease),
    stockTables(clients.powertools),
  ]);
  return {
    transactional: exampleConsumerHandler(clients.transactional, transactional, { sqs, dlqUrl }),
    lease: createLeaseConsumerHandler({
      ...lease,
      dynamodb: clients.lease,
      sqs,
      dlqUrl,
      ...silentTelemetry(),
    }),
    powertools: createPowertoolsConsumerHandler({
      ...powertools,
      dynamodb: clients.powertools,
      ...silentTelemetry(),
    }),
  };
}

export async function timeBatch(handler: BatchHandler, messages: readonly PublishMessage[]): Promise<number> {
  return timeEvent(handler, fifoEvent(messages, QUEUE_ARN));
}

/**
 * How long one invocation with `event` takes; a record it fails is an error of the benchmark.
 * `context` gives it 30 s unless told: a consumer that respects its deadline defers records past it.
 */
export async function timeEvent(
  handler: BatchHandler,
  event: SQSEvent,
  context = invocationContext(),
): Promise<number> {
  const started = performance.now();
  const response = await handler(event, context);
  const elapsed = performance.now() - started;
  if (response.batchItemFailures.length > 0) {
    throw new Error(`${response.batchItemFailures.length} records of a benchmark batch failed`);
  }
  return elapsed;
}
