import type { DynamoDBClient } from '@aws-sdk/client-dynamodb';
import type { SQSClient } from '@aws-sdk/client-sqs';
import { type Spread, spreadOf } from '../harness/statistics.js';
import { resolveSettings } from '../lib/constructs/pipeline-settings.js';
import { type BatchHandler, clientsFor, stockTables, timeEvent } from './batch-latency.js';
import { type Meter, meter } from './billed-usage.js';
import { type BenchEndpoints, sqsClient } from './clients.js';
import { createPowertoolsConsumerHandler } from './consumers/powertools-consumer.js';
import { createStandardConsumerHandler } from './consumers/standard-consumer.js';
import { type CostPerMillion, costPerMillionMessages, type UsagePerMessage } from './cost.js';
import { cpuSince, cpuTimes } from './cpu-time.js';
import type { InFlightRow } from './in-flight-duplicates.js';
import { invocationContext, silentTelemetry } from './invocation.js';
import { createStandardQueue, deleteQueues } from './resources.js';
import { rotate } from './rotate.js';
import { standardEvent, stockMessages } from './stock-events.js';

/** The standard-queue consumers compared: each with its documented defaults. */
export const STANDARD_CONSUMERS = {
  transactional: 'Oncely: standardBatch, transactional mode',
  leaseAtLeastOnce: 'Oncely: standardBatch in lease mode, at-least-once',
  leaseAtMostOnce: 'Oncely: standardBatch in lease mode, at-most-once',
  powertools: 'Powertools: BatchProcessor (EventType.SQS) + makeIdempotent',
} as const;
export type StandardConsumer = keyof typeof STANDARD_CONSUMERS;

/** Lambda's longest function timeout, 15 minutes. */
const LONGEST_TIMEOUT_MS = 900_000;

/** A standard queue's ARN as the event source mapping sets it on records: no `.fifo`. */
export const STANDARD_QUEUE_ARN = 'arn:aws:sqs:us-east-1:123456789012:bench';

export interface StandardBatchesOptions {
  /** Records per batch: 10 is the event source's default, 100 one with a batching window. */
  recordCounts: readonly number[];
  /** Timed batches per consumer and record count, after untimed ones. */
  batches: number;
  warmupBatches: number;
  /**
   * Fewer batches where they are large (`batchesOf`): at most this many timed records per cell.
   * @default no cap
   */
  maxTimedRecords?: number;
  /** Added to every DynamoDB request, as (2) adds it. */
  latencyMs: number;
  onProgress?: (line: string) => void;
}

/** (8): standard queues' batches, and their duplicates that arrive while the original is in flight. */
export interface StandardQueueResults {
  batches: StandardBatchRow[];
  inFlight: InFlightRow[];
}

export interface StandardBatchRow {
  consumer: StandardConsumer;
  records: number;
  /** Milliseconds from invocation to the partial batch response. */
  latency: Spread;
  dynamodbRequestsPerRecord: number;
  writeUnitsPerRecord: number;
  readUnitsPerRecord: number;
  /**
   * This process's CPU (every thread) while the consumer ran its batches, per record, in ms: the
   * consumer runs in this process, and nothing else does meanwhile (DynamoDB Local is a process of
   * its own). Undefined without /proc.
   */
  cpuMsPerRecord?: number;
  /** A million records in batches of this size, at us-east-1 prices (cost.ts). */
  cost: CostPerMillion;
}

/**
 * Standard queues: each consumer on batches of `recordCounts` StockReceived first deliveries, one
 * SKU per record, invoked directly with the event a standard queue's event source delivers; every
 * DynamoDB request held `latencyMs`, the consumers taking turns, batch after batch. Counted per
 * record: the DynamoDB requests and units, and the CPU used.
 */
export async function measureStandardBatches(
  endpoints: BenchEndpoints,
  options: StandardBatchesOptions,
): Promise<StandardBatchRow[]> {
  const consumers = Object.keys(STANDARD_CONSUMERS) as StandardConsumer[];
  const sqs = sqsClient(endpoints);
  const clients = clientsFor(endpoints, consumers, options.latencyMs);
  const dlq = await createStandardQueue(sqs, {});
  try {
    const handlers = await standardHandlers(clients, sqs, dlq.url);
    const meters = new Map(consumers.map((consumer) => [consumer, meter(clients[consumer])]));
    const rows: StandardBatchRow[] = [];
    for (const records of options.recordCounts) {
      rows.push(...(await timeRecordCount(handlers, meters, records, options)));
      options.onProgress?.(
        `${records} records: ${rows
          .filter((row) => row.records === records)
          .map((row) => `${row.consumer} ${row.latency.median.toFixed(1)} ms`)
          .join(', ')}`,
      );
    }
    return rows;
  } finally {
    await deleteQueues(sqs, [dlq]);
    sqs.destroy();
    for (const client of Object.values(clients)) client.destroy();
  }
}

async function timeRecordCount(
  handlers: Record<StandardConsumer, BatchHandler>,
  meters: Map<StandardConsumer, Meter>,
  records: number,
  options: StandardBatchesOptions,
): Promise<StandardBatchRow[]> {
  const consumers = [...meters.keys()];
  const samples = new Map(consumers.map((consumer) => [consumer, [] as number[]]));
  const cpuMs = new Map<StandardConsumer, number | undefined>(consumers.map((consumer) => [consumer, 0]));
  const { batches, warmupBatches } = batchesOf(records, options);
  for (let round = 0; round < warmupBatches + batches; round++) {
    const timed = round >= warmupBatches;
    if (round === warmupBatches) for (const counter of meters.values()) counter.reset();
    for (const consumer of rotate(consumers, round)) {
      const event = standardEvent(stockMessages(records, records), STANDARD_QUEUE_ARN);
      const before = cpuTimes();
      // Lambda's longest timeout, which a function taking 1,000-record batches would be given: on
      // a loaded machine a 30 s one would have Oncely defer records at its deadline, and fail the run.
      const elapsed = await timeEvent(handlers[consumer], event, invocationContext(LONGEST_TIMEOUT_MS));
      const after = cpuTimes();
      if (!timed) continue;
      samples.get(consumer)?.push(elapsed);
      const used = before && after && cpuSince(before, after);
      const sofar = cpuMs.get(consumer);
      cpuMs.set(
        consumer,
        used && sofar !== undefined ? sofar + used.mainThread + used.otherThreads : undefined,
      );
    }
  }
  const timedRecords = batches * records;
  const { consumerMemoryMiB } = resolveSettings({ queueType: 'standard' });
  return consumers.map((consumer): StandardBatchRow => {
    const row = (meters.get(consumer) as Meter).perRecord(timedRecords);
    const latency = spreadOf(samples.get(consumer) ?? []);
    const cpu = cpuMs.get(consumer);
    return {
      consumer,
      records,
      latency,
      ...row,
      cpuMsPerRecord: cpu === undefined ? undefined : cpu / timedRecords,
      cost: costPerMillionMessages(standardUsage(row, records, latency, consumerMemoryMiB)),
    };
  });
}

/**
 * The timed and untimed batches of a cell of `records`: `batches` and `warmupBatches`, or, past
 * `maxTimedRecords` timed records, as many as it allows (at least 3), after a fifth as many untimed
 * ones (at least 1). A 1,000-record batch takes seconds on a shared machine; 35 of them per consumer
 * would take the section past half an hour.
 */
export function batchesOf(
  records: number,
  {
    batches,
    warmupBatches,
    maxTimedRecords,
  }: Pick<StandardBatchesOptions, 'batches' | 'warmupBatches' | 'maxTimedRecords'>,
): { batches: number; warmupBatches: number } {
  if (maxTimedRecords === undefined || batches * records <= maxTimedRecords)
    return { batches, warmupBatches };
  const capped = Math.max(3, Math.floor(maxTimedRecords / records));
  return { batches: capped, warmupBatches: Math.min(warmupBatches, Math.max(1, Math.ceil(capped / 5))) };
}

/**
 * What a record uses of what AWS bills on a standard queue in batches of `records`: the measured
 * DynamoDB units; the SQS calls of the pipeline, the same for every consumer — the publisher's
 * `SendMessageBatch` of 10, the event source's one receive and one `DeleteMessageBatch` a batch
 * (their payloads under 64 KB); one invocation a batch, billed for the batch's median.
 */
function standardUsage(
  measured: Pick<StandardBatchRow, 'writeUnitsPerRecord' | 'readUnitsPerRecord'>,
  records: number,
  latency: Spread,
  lambdaMemoryMiB: number,
): UsagePerMessage {
  return {
    dynamodbWriteUnits: measured.writeUnitsPerRecord,
    dynamodbReadUnits: measured.readUnitsPerRecord,
    sqsRequests: 1 / SEND_BATCH_SIZE + 2 / records,
    lambdaInvocations: 1 / records,
    lambdaBilledMsPerInvocation: Math.ceil(latency.median),
    lambdaMemoryMiB,
    queueType: 'standard',
  };
}

/** SendMessageBatch's most messages a call, as the publisher sends them. */
const SEND_BATCH_SIZE = 10;

async function standardHandlers(
  clients: Record<StandardConsumer, DynamoDBClient>,
  sqs: SQSClient,
  dlqUrl: string,
): Promise<Record<StandardConsumer, BatchHandler>> {
  const oncely = async (mode: 'transactional' | 'at-least-once' | 'at-most-once', client: DynamoDBClient) =>
    createStandardConsumerHandler({
      ...(await stockTables(client)),
      mode,
      dynamodb: client,
      sqs,
      dlqUrl,
      ...silentTelemetry(),
    });
  const [transactional, leaseAtLeastOnce, leaseAtMostOnce, powertools] = await Promise.all([
    oncely('transactional', clients.transactional),
    oncely('at-least-once', clients.leaseAtLeastOnce),
    oncely('at-most-once', clients.leaseAtMostOnce),
    stockTables(clients.powertools).then((tables) =>
      createPowertoolsConsumerHandler({
        ...tables,
        dynamodb: clients.powertools,
        queueType: 'standard',
        ...silentTelemetry(),
      }),
    ),
  ]);
  return { transactional, leaseAtLeastOnce, leaseAtMostOnce, powertools };
}
