import type { DynamoDBClient } from '@aws-sdk/client-dynamodb';
import type { SQSClient } from '@aws-sdk/client-sqs';
import type { Context, SQSBatchResponse, SQSEvent } from 'aws-lambda';
// The store the shop's consumer takes: the package's, as the shop imports it.
import { DynamoDBIdempotencyStore } from 'oncely/idempotency';
import { createShopHandler } from '../examples/shop/consumer/consumer.js';
import { DEFAULT_NOTIFICATION_TIMEOUT_MS } from '../examples/shop/consumer/environment.js';
import { countRequests } from '../src/sandbox/request-counter.js';
import { type BenchEndpoints, dynamoDbClient, sqsClient } from './clients.js';
import { createLeaseConsumerHandler } from './consumers/lease-consumer.js';
import { createPowertoolsConsumerHandler } from './consumers/powertools-consumer.js';
import { invocationContext, silentTelemetry } from './invocation.js';
import { createFifoQueue, deleteQueues, newIdempotencyTable, newLedgerTable } from './resources.js';
import { rotate } from './rotate.js';
import { type Spread, spreadOf } from './statistics.js';
import { fifoEvent, stockMessages } from './stock-events.js';

export const BATCH_CONSUMERS = {
  transactional: 'Oncely: the example consumer (transactional mode)',
  lease: 'Oncely: fifoBatch in lease mode',
  powertools: 'Powertools: SqsFifoPartialProcessorAsync + makeIdempotent',
} as const;
export type BatchConsumer = keyof typeof BATCH_CONSUMERS;

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

export interface BatchLatency {
  consumer: BatchConsumer;
  groups: number;
  /** Milliseconds from invocation to the partial batch response. */
  latency: Spread;
  requestsPerRecord: number;
}

type BatchHandler = (event: SQSEvent, context: Context) => Promise<SQSBatchResponse>;

const BATCH_SIZE = 10;
/** The records carry an ARN as Lambda's event source mapping sets it; no consumer reads it. */
const QUEUE_ARN = 'arn:aws:sqs:us-east-1:123456789012:bench.fifo';

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
  const clients = Object.fromEntries(
    Object.keys(BATCH_CONSUMERS).map((consumer) => [consumer, dynamoDbClient(endpoints, options.latencyMs)]),
  ) as Record<BatchConsumer, DynamoDBClient>;
  const dlq = await createFifoQueue(sqs, {});
  try {
    const handlers = await buildConsumers(clients, sqs, dlq.url);
    const consumers = Object.keys(handlers) as BatchConsumer[];
    const results: BatchLatency[] = [];
    for (const groups of options.groupCounts) {
      const samples = new Map<BatchConsumer, number[]>(consumers.map((consumer) => [consumer, []]));
      const counters = new Map(consumers.map((consumer) => [consumer, countRequests(clients[consumer])]));
      for (let round = 0; round < options.warmupBatches + options.batches; round++) {
        if (round === options.warmupBatches) for (const counter of counters.values()) counter.reset();
        for (const consumer of rotate(consumers, round)) {
          const elapsed = await timeBatch(handlers[consumer], groups);
          if (round >= options.warmupBatches) samples.get(consumer)?.push(elapsed);
        }
      }
      for (const consumer of consumers) {
        results.push({
          consumer,
          groups,
          latency: spreadOf(samples.get(consumer) ?? []),
          requestsPerRecord: (counters.get(consumer)?.total() ?? 0) / (options.batches * BATCH_SIZE),
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
  } finally {
    await deleteQueues(sqs, [dlq]);
    sqs.destroy();
    for (const client of Object.values(clients)) client.destroy();
  }
}

async function buildConsumers(
  clients: Record<BatchConsumer, DynamoDBClient>,
  sqs: SQSClient,
  dlqUrl: string,
): Promise<Record<BatchConsumer, BatchHandler>> {
  const tablesOf = async (client: DynamoDBClient) => {
    const [idempotencyTableName, ledgerTableName] = await Promise.all([
      newIdempotencyTable(client),
      newLedgerTable(client),
    ]);
    // Nothing is posted: the workload has no notifications.
    return { idempotencyTableName, ledgerTableName, notificationUrl: 'http://127.0.0.1:9/unused' };
  };
  const [transactional, lease, powertools] = await Promise.all([
    tablesOf(clients.transactional),
    tablesOf(clients.lease),
    tablesOf(clients.powertools),
  ]);
  return {
    // The shop's consumer as deployed, but for its clients and its silent logger: it publishes the
    // metrics it makes itself, after each batch, as the other two do with logMetrics.
    transactional: createShopHandler(
      {
        ledgerTableName: transactional.ledgerTableName,
        notificationUrl: transactional.notificationUrl,
        notificationTimeoutMs: DEFAULT_NOTIFICATION_TIMEOUT_MS,
        notificationMode: 'at-most-once',
      },
      {
        store: new DynamoDBIdempotencyStore({
          client: clients.transactional,
          tableName: transactional.idempotencyTableName,
        }),
        deadLetterQueue: { client: sqs, queueUrl: dlqUrl },
        logger: silentTelemetry().logger,
      },
    ),
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

async function timeBatch(handler: BatchHandler, groups: number): Promise<number> {
  const event = fifoEvent(stockMessages(BATCH_SIZE, groups), QUEUE_ARN);
  const context = invocationContext();
  const started = performance.now();
  const response = await handler(event, context);
  const elapsed = performance.now() - started;
  if (response.batchItemFailures.length > 0) {
    throw new Error(`${response.batchItemFailures.length} records of a benchmark batch failed`);
  }
  return elapsed;
}
