import type { BilledUsage, CostMode } from './billed-usage.js';
import type { PublisherCost } from './publisher-calls.js';
import type { EventSourceCalls } from './throughput.js';

/**
 * us-east-1 on-demand prices as the AWS pricing pages published them, as of 2026-06. The machine
 * that runs the benchmarks may have no network: they are not re-checked on the day of a run.
 */
export const PRICES = {
  asOf: '2026-06',
  region: 'us-east-1',
  sources: [
    'https://aws.amazon.com/lambda/pricing/',
    'https://aws.amazon.com/dynamodb/pricing/on-demand/',
    'https://aws.amazon.com/sqs/pricing/',
  ],
  /** Lambda on Arm (Graviton), which the construct's functions run on. */
  lambdaArmPerGbSecond: 0.0000133334,
  lambdaPerMillionRequests: 0.2,
  /** DynamoDB on-demand, after the November 2024 price cut. */
  dynamodbPerMillionWriteUnits: 0.625,
  dynamodbPerMillionReadUnits: 0.125,
  /** SQS FIFO: every 64 KB chunk of a request's payload is billed as one request. */
  sqsFifoPerMillionRequests: 0.5,
  /** SQS standard (and fair) queues, billed by the same 64 KB chunks. */
  sqsStandardPerMillionRequests: 0.4,
  sqsChunkBytes: 64 * 1024,
} as const;

export type Prices = typeof PRICES;

/** What one message uses of what AWS bills, on average. */
export interface UsagePerMessage {
  dynamodbWriteUnits: number;
  dynamodbReadUnits: number;
  /** Billed SQS requests: 64 KB chunks of the calls' payloads. */
  sqsRequests: number;
  lambdaInvocations: number;
  /** Lambda bills each invocation's duration rounded up to the millisecond. */
  lambdaBilledMsPerInvocation: number;
  lambdaMemoryMiB: number;
  /** The queue the SQS requests go to, which sets their price. FIFO when unset. */
  queueType?: 'fifo' | 'standard';
}

/** Dollars per million messages, by what is billed. */
export interface CostPerMillion {
  dynamodbWrites: number;
  dynamodbReads: number;
  sqs: number;
  lambdaRequests: number;
  lambdaDuration: number;
  total: number;
}

/** The cost of a million messages that each use `usage`. */
export function costPerMillionMessages(usage: UsagePerMessage, prices: Prices = PRICES): CostPerMillion {
  // Units per message times a million messages, at a price per million units: units per message × price.
  const dynamodbWrites = usage.dynamodbWriteUnits * prices.dynamodbPerMillionWriteUnits;
  const dynamodbReads = usage.dynamodbReadUnits * prices.dynamodbPerMillionReadUnits;
  const sqs =
    usage.sqsRequests *
    (usage.queueType === 'standard'
      ? prices.sqsStandardPerMillionRequests
      : prices.sqsFifoPerMillionRequests);
  const lambdaRequests = usage.lambdaInvocations * prices.lambdaPerMillionRequests;
  const gbSecondsPerInvocation =
    (Math.ceil(usage.lambdaBilledMsPerInvocation) / 1000) * (usage.lambdaMemoryMiB / 1024);
  const lambdaDuration = usage.lambdaInvocations * 1e6 * gbSecondsPerInvocation * prices.lambdaArmPerGbSecond;
  return {
    dynamodbWrites,
    dynamodbReads,
    sqs,
    lambdaRequests,
    lambdaDuration,
    total: dynamodbWrites + dynamodbReads + sqs + lambdaRequests + lambdaDuration,
  };
}

/** Billed requests for `calls` calls of `payloadBytes` each: one per started 64 KB chunk. */
export function billedSqsRequests(calls: number, payloadBytes: number, prices: Prices = PRICES): number {
  return calls * Math.max(1, Math.ceil(payloadBytes / prices.sqsChunkBytes));
}

/** The SQS calls per message, as measured: the publisher's sends and the event source's receives and deletes. */
export interface SqsCallsPerMessage {
  sendMessageBatch: number;
  /** Receives that brought messages: one consumer invocation each. */
  receiveMessage: number;
  deleteMessageBatch: number;
}

/** One way of consuming, at one number of groups per batch: its usage and what a million messages cost. */
export interface ModeCost {
  mode: CostMode;
  groups: number;
  usage: UsagePerMessage;
  cost: CostPerMillion;
}

/**
 * The SQS calls per message from the run: the publisher's SendMessageBatch calls of (3), and the
 * ReceiveMessage calls that brought messages and the DeleteMessageBatch calls of (5)'s event source,
 * over every pipeline. The empty receives of an idle queue are left out: they cost the same whatever
 * the traffic.
 */
export function sqsCallsPerMessage(
  publisher: readonly PublisherCost[],
  eventSources: readonly EventSourceCalls[],
): SqsCallsPerMessage {
  const sent = publisher.find((row) => row.sender === 'publisher' && row.addedLatencyMs === 0);
  const sum = (key: keyof EventSourceCalls) => eventSources.reduce((total, calls) => total + calls[key], 0);
  const received = sum('messages');
  return {
    sendMessageBatch: sent ? sent.sqsCalls / sent.messages : Number.NaN,
    receiveMessage: sum('batches') / received,
    deleteMessageBatch: sum('deleteBatches') / received,
  };
}

/** What a million messages cost in each way of consuming, from the usage the run measured. */
export function costOfModes(
  usage: readonly BilledUsage[],
  sqsCalls: SqsCallsPerMessage,
  lambdaMemoryMiB: number,
  prices: Prices = PRICES,
): ModeCost[] {
  const { sendMessageBatch, receiveMessage, deleteMessageBatch } = sqsCalls;
  return usage.map((measured) => {
    // A call's payload is its messages' bodies: 1 / (calls per message) of them.
    const payload = (callsPerMessage: number) => measured.bodyBytes / callsPerMessage;
    const perMessage: UsagePerMessage = {
      dynamodbWriteUnits: measured.writeUnitsPerRecord,
      dynamodbReadUnits: measured.readUnitsPerRecord,
      sqsRequests:
        billedSqsRequests(sendMessageBatch, payload(sendMessageBatch), prices) +
        billedSqsRequests(receiveMessage, payload(receiveMessage), prices) +
        // A delete carries receipt handles, never bodies: one chunk.
        deleteMessageBatch,
      // One invocation per receive that brought messages; each lasts as long as a measured batch.
      lambdaInvocations: receiveMessage,
      lambdaBilledMsPerInvocation: Math.ceil(measured.batchMs.median),
      lambdaMemoryMiB,
    };
    return {
      mode: measured.mode,
      groups: measured.groups,
      usage: perMessage,
      cost: costPerMillionMessages(perMessage, prices),
    };
  });
}

/** (7): what a million messages cost in each way of consuming, with what the figures were made of. */
export interface CostReport {
  prices: Prices;
  lambdaMemoryMiB: number;
  sqsCalls: SqsCallsPerMessage;
  modes: ModeCost[];
}

/** The cost of each way of consuming from the run's figures: (7)'s usage, (3)'s sends, (5)'s event source. */
export function costReport(figures: {
  usage: readonly BilledUsage[];
  publisher: readonly PublisherCost[];
  eventSources: readonly EventSourceCalls[];
  lambdaMemoryMiB: number;
}): CostReport {
  const sqsCalls = sqsCallsPerMessage(figures.publisher, figures.eventSources);
  return {
    prices: PRICES,
    lambdaMemoryMiB: figures.lambdaMemoryMiB,
    sqsCalls,
    modes: costOfModes(figures.usage, sqsCalls, figures.lambdaMemoryMiB),
  };
}
