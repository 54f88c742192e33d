import type { ConsumedCapacity, DynamoDBClient } from '@aws-sdk/client-dynamodb';
import type { SQSClient } from '@aws-sdk/client-sqs';
import { type Spread, spreadOf } from '../harness/statistics.js';
import type { IdempotencyMode } from '../lambdas/idempotency/index.js';
import { countRequests } from '../sandbox/request-counter.js';
import {
  BATCH_SIZE,
  type BatchHandler,
  exampleConsumerHandler,
  QUEUE_ARN,
  stockTables,
  timeEvent,
} from './batch-latency.js';
import { type BenchEndpoints, dynamoDbClient, sqsClient } from './clients.js';
import { createIdempotencyFreeConsumerHandler } from './consumers/idempotency-free-consumer.js';
import { createLeaseConsumerHandler } from './consumers/lease-consumer.js';
import { createPowertoolsConsumerHandler } from './consumers/powertools-consumer.js';
import { silentTelemetry } from './invocation.js';
import { createFifoQueue, deleteQueues } from './resources.js';
import { rotate } from './rotate.js';
import { fifoEvent, stockMessages } from './stock-events.js';
import { sumWriteUnits } from './write-units.js';

/** The ways of consuming that the cost of a million messages compares, with the names a sentence gives them. */
export const COST_MODES = {
  transactional: { label: 'Oncely transactional mode (the example consumer)', short: 'transactional mode' },
  leaseAtLeastOnce: { label: 'Oncely lease mode, at-least-once', short: 'lease mode at-least-once' },
  leaseAtMostOnce: { label: 'Oncely lease mode, at-most-once', short: 'lease mode at-most-once' },
  powertools: { label: 'Powertools: makeIdempotent + SqsFifoPartialProcessorAsync', short: 'Powertools' },
  idempotencyFree: { label: 'no idempotency', short: 'no idempotency' },
} as const;
export type CostMode = keyof typeof COST_MODES;

export interface BilledUsageOptions {
  groupCounts: readonly number[];
  batches: number;
  warmupBatches: number;
  /** Added to every DynamoDB request, as (2) adds it: the batch's duration is what Lambda bills. */
  latencyMs: number;
}

/** What one consumer's batches of first deliveries used of what AWS bills, per record or per batch. */
export interface BilledUsage {
  mode: CostMode;
  groups: number;
  dynamodbRequestsPerRecord: number;
  writeUnitsPerRecord: number;
  readUnitsPerRecord: number;
  /** Milliseconds from invocation to the partial batch response. */
  batchMs: Spread;
  /** The largest record body: SQS bills a request per 64 KB of its payload. */
  bodyBytes: number;
}

/**
 * (7)'s measurement: each way of consuming on batches of 10 StockReceived first deliveries, as (2)
 * times them (invoked directly, `latencyMs` added to every DynamoDB request, the consumers taking
 * turns), with the DynamoDB requests and the capacity units DynamoDB reports for them counted.
 * Besides (2)'s consumers it runs lease mode at-most-once and the consumer without idempotency.
 */
export async function measureBilledUsage(
  endpoints: BenchEndpoints,
  options: BilledUsageOptions,
): Promise<BilledUsage[]> {
  const modes = Object.keys(COST_MODES) as CostMode[];
  const sqs = sqsClient(endpoints);
  const clients = Object.fromEntries(
    modes.map((mode) => [mode, dynamoDbClient(endpoints, options.latencyMs)]),
  ) as Record<CostMode, DynamoDBClient>;
  const dlq = await createFifoQueue(sqs, {});
  try {
    const handlers = await buildHandlers(clients, sqs, dlq.url);
    const meters = Object.fromEntries(modes.map((mode) => [mode, meter(clients[mode])])) as Record<
      CostMode,
      Meter
    >;
    const rows: BilledUsage[] = [];
    for (const groups of options.groupCounts) {
      const times = new Map<CostMode, number[]>(modes.map((mode) => [mode, []]));
      let bodyBytes = 0;
      for (let round = 0; round < options.warmupBatches + options.batches; round++) {
        if (round === options.warmupBatches) for (const mode of modes) meters[mode].reset();
        for (const mode of rotate(modes, round)) {
          const event = fifoEvent(stockMessages(BATCH_SIZE, groups), QUEUE_ARN);
          bodyBytes = Math.max(bodyBytes, ...event.Records.map(({ body }) => Buffer.byteLength(body)));
          const elapsed = await timeEvent(handlers[mode], event);
          if (round >= options.warmupBatches) times.get(mode)?.push(elapsed);
        }
      }
      const records = options.batches * BATCH_SIZE;
      for (const mode of modes) {
        rows.push({
          mode,
          groups,
          ...meters[mode].perRecord(records),
          batchMs: spreadOf(times.get(mode) ?? []),
          bodyBytes,
        });
      }
    }
    return rows;
  } finally {
    await deleteQueues(sqs, [dlq]);
    sqs.destroy();
    for (const client of Object.values(clients)) client.destroy();
  }
}

/** The DynamoDB requests of one client, and the write and read units DynamoDB reported for them. */
export interface Meter {
  requests: ReturnType<typeof countRequests>;
  writeUnits: ReturnType<typeof sumWriteUnits>;
  readUnits: ReturnType<typeof sumWriteUnits>;
  /** The requests and units so far, divided among `records` records. */
  perRecord(
    records: number,
  ): Pick<BilledUsage, 'dynamodbRequestsPerRecord' | 'writeUnitsPerRecord' | 'readUnitsPerRecord'>;
  reset(): void;
}

export function meter(client: DynamoDBClient): Meter {
  const [requests, writeUnits, readUnits] = [
    countRequests(client),
    sumWriteUnits(client),
    sumReadUnits(client),
  ];
  return {
    requests,
    writeUnits,
    readUnits,
    perRecord: (records) => ({
      dynamodbRequestsPerRecord: requests.total() / records,
      writeUnitsPerRecord: writeUnits.total() / records,
      readUnitsPerRecord: readUnits.total() / records,
    }),
    reset: () => {
      for (const counter of [requests, writeUnits, readUnits]) counter.reset();
    },
  };
}

const READS = new Set(['GetItem', 'BatchGetItem', 'Query', 'Scan', 'TransactGetItems']);

/** As write-units.ts's sumWriteUnits, for the read units DynamoDB reports. */
function sumReadUnits(client: DynamoDBClient) {
  let units = 0;
  client.middlewareStack.add(
    (next, context) => async (args) => {
      if (!READS.has(String(context.commandName).replace(/Command$/, ''))) return next(args);
      (args.input as { ReturnConsumedCapacity?: string }).ReturnConsumedCapacity = 'TOTAL';
      const result = await next(args);
      const { ConsumedCapacity } = result.output as {
        ConsumedCapacity?: ConsumedCapacity | ConsumedCapacity[];
      };
      for (const consumed of [ConsumedCapacity ?? []].flat()) {
        units += consumed.ReadCapacityUnits ?? consumed.CapacityUnits ?? 0;
      }
      return result;
    },
    { step: 'initialize', name: 'benchReadUnits' },
  );
  return {
    total: () => units,
    reset: () => {
      units = 0;
    },
  };
}

async function buildHandlers(
  clients: Record<CostMode, DynamoDBClient>,
  sqs: SQSClient,
  dlqUrl: string,
): Promise<Record<CostMode, BatchHandler>> {
  const lease = async (mode: IdempotencyMode, client: DynamoDBClient) =>
    createLeaseConsumerHandler({
      ...(await stockTables(client)),
      mode,
      dynamodb: client,
      sqs,
      dlqUrl,
      ...silentTelemetry(),
    });
  const idempotencyFreeTables = await stockTables(clients.idempotencyFree);
  const idempotencyFree = createIdempotencyFreeConsumerHandler({
    dynamodb: clients.idempotencyFree,
    ledgerTableName: idempotencyFreeTables.ledgerTableName,
    notificationUrl: idempotencyFreeTables.notificationUrl,
  });
  return {
    // The example consumer as (2) builds it: deployed code, its clients and a silent logger.
    transactional: exampleConsumerHandler(clients.transactional, await stockTables(clients.transactional), {
      sqs,
      dlqUrl,
    }),
    leaseAtLeastOnce: await lease('at-least-once', clients.leaseAtLeastOnce),
    leaseAtMostOnce: await lease('at-most-once', clients.leaseAtMostOnce),
    powertools: createPowertoolsConsumerHandler({
      ...(await stockTables(clients.powertools)),
      dynamodb: clients.powertools,
      ...silentTelemetry(),
    }),
    idempotencyFree,
  };
}
