import type { Profiler } from 'node:inspector';
import { isMainThread } from 'node:worker_threads';
import type { DynamoDBClient } from '@aws-sdk/client-dynamodb';
import type { SQSClient } from '@aws-sdk/client-sqs';
import type { SQSEvent } from 'aws-lambda';
import { countRequests } from '../sandbox/request-counter.js';
import {
  BATCH_SIZE,
  type BatchHandler,
  exampleConsumerHandler,
  QUEUE_ARN,
  type StockTables,
  stockTables,
  timeEvent,
} from './batch-latency.js';
import { type BenchEndpoints, dynamoDbClient, sqsClient } from './clients.js';
import { createLeaseConsumerHandler } from './consumers/lease-consumer.js';
import { attributeProfiles, CODE_ORIGINS, type CodeOrigin, profileWhile } from './cpu-profile.js';
import { cpuTimes } from './cpu-time.js';
import { silentTelemetry } from './invocation.js';
import { createFifoQueue, deleteQueues, sumOfAttribute } from './resources.js';
import { fifoEvent, stockMessages } from './stock-events.js';
import type { PipelineConsumer } from './throughput.js';

/** Oncely's modes, named as (5) names their consumers. */
export const PROFILED_MODES = [
  'transactional',
  'leaseAtLeastOnce',
  'leaseAtMostOnce',
] as const satisfies readonly PipelineConsumer[];
export type ProfiledMode = (typeof PROFILED_MODES)[number];

export interface OwnCpuOptions {
  /** First deliveries per mode profiled, in batches of 10; as many again are timed unprofiled. */
  messages: number;
  /** Delivered first, unprofiled, so that connections, caches and the JIT are warm. */
  warmupMessages: number;
  /** Message groups per batch. */
  groups: number;
  projectRoot: string;
}

export interface OwnCpu {
  consumer: ProfiledMode;
  messages: number;
  /** DynamoDB requests per message over the profiled batches, counted on the consumer's client. */
  requestsPerMessage: number;
  /** The thread's CPU time per message (Linux's /proc), over the unprofiled half; none elsewhere, or off the main thread. */
  threadCpuMsPerMessage?: number;
  /** The profile's busy time per message: the wall time of its samples, the event loop's idle ones left out. */
  sampledMsPerMessage: number;
  /**
   * CPU per message by origin, in ms: each origin's share of the busy samples times the thread's CPU
   * time per message (without /proc, the profiled half's busy wall time, which the profiler's own
   * cost and a busy machine's descheduling inflate).
   */
  msPerMessage: Record<CodeOrigin, number>;
  /** Oncely's functions with the most self time, in ms per message. */
  topOncelyFunctions: { name: string; location: string; ms: number }[];
}

/** A sample every 200 µs: ~1,000 of Oncely's per mode in a full run, at a few % of the thread's CPU. */
const SAMPLING_INTERVAL_US = 200;
/** The timed and the profiled batches take turns this many times, so that drift falls on both alike. */
const ROUNDS = 4;
const TOP_FUNCTIONS = 5;

/**
 * (5b) Oncely's own CPU per message in each mode: each consumer in this process, on this thread,
 * invoked with batches of first deliveries against DynamoDB Local (no latency added). Half of them
 * run under V8's sampling profiler, whose samples give each origin's share of the thread's busy time
 * by the script of the function they caught running (`cpu-profile.ts`); the other half, in turns
 * with the first, run unprofiled and give the thread's CPU time per message, free of the profiler's
 * own cost. Both consumers import the package's compiled modules (`oncely/*`), each function in its
 * own script, so the attribution needs no source map (a bundle puts every package in one script,
 * whose map would have to place each function). The events are built before any of it starts.
 */
export async function measureOwnCpu(endpoints: BenchEndpoints, options: OwnCpuOptions): Promise<OwnCpu[]> {
  const sqs = sqsClient(endpoints);
  const dlq = await createFifoQueue(sqs, {});
  try {
    const rows: OwnCpu[] = [];
    for (const consumer of PROFILED_MODES) {
      const client = dynamoDbClient(endpoints);
      try {
        const tables = await stockTables(client);
        const handler = consumerOf(consumer, client, tables, { sqs, dlqUrl: dlq.url });
        rows.push(await profileConsumer(consumer, handler, client, tables, options));
      } finally {
        client.destroy();
      }
    }
    return rows;
  } finally {
    await deleteQueues(sqs, [dlq]);
    sqs.destroy();
  }
}

function consumerOf(
  consumer: ProfiledMode,
  client: DynamoDBClient,
  tables: StockTables,
  deadLetterQueue: { sqs: SQSClient; dlqUrl: string },
): BatchHandler {
  return consumer === 'transactional'
    ? exampleConsumerHandler(client, tables, deadLetterQueue)
    : createLeaseConsumerHandler({
        ...tables,
        mode: consumer === 'leaseAtLeastOnce' ? 'at-least-once' : 'at-most-once',
        dynamodb: client,
        ...deadLetterQueue,
        ...silentTelemetry(),
      });
}

async function profileConsumer(
  consumer: ProfiledMode,
  handler: BatchHandler,
  client: DynamoDBClient,
  tables: StockTables,
  options: OwnCpuOptions,
): Promise<OwnCpu> {
  const warmup = batchesOf(options.warmupMessages, options.groups);
  await deliver(handler, warmup);
  const requests = countRequests(client);
  const [timed, profiled] = [
    batchesOf(options.messages, options.groups),
    batchesOf(options.messages, options.groups),
  ];
  const messages = profiled.length * BATCH_SIZE;
  let timedMs: number | undefined = 0;
  const profiles: Profiler.Profile[] = [];
  for (let round = 0; round < ROUNDS; round++) {
    const before = threadCpuMs();
    await deliver(handler, share(timed, round));
    const after = threadCpuMs();
    timedMs =
      timedMs === undefined || before === undefined || after === undefined
        ? undefined
        : timedMs + after - before;
    profiles.push(
      (await profileWhile(SAMPLING_INTERVAL_US, () => deliver(handler, share(profiled, round)))).profile,
    );
  }
  const requestsPerMessage = requests.total() / (2 * messages);
  const applied = await sumOfAttribute(client, tables.ledgerTableName, 'available');
  const delivered = (warmup.length + timed.length + profiled.length) * BATCH_SIZE;
  if (applied !== delivered) {
    throw new Error(`${consumer}: the ledger holds ${applied} units after ${delivered} messages of one`);
  }
  const { samples, busyMs, top } = attributeProfiles(profiles, options.projectRoot, 'oncely', TOP_FUNCTIONS);
  const busySamples = Object.values(samples).reduce((sum, count) => sum + count, 0);
  const cpuMsPerMessage = (timedMs ?? busyMs) / messages;
  const msPerSample = cpuMsPerMessage / busySamples;
  return {
    consumer,
    messages,
    requestsPerMessage,
    threadCpuMsPerMessage: timedMs === undefined ? undefined : timedMs / messages,
    sampledMsPerMessage: busyMs / messages,
    msPerMessage: Object.fromEntries(
      (Object.keys(CODE_ORIGINS) as CodeOrigin[]).map((origin) => [origin, samples[origin] * msPerSample]),
    ) as Record<CodeOrigin, number>,
    topOncelyFunctions: top.map(({ name, location, samples: count }) => ({
      name,
      location,
      ms: count * msPerSample,
    })),
  };
}

/** This thread's CPU time so far, in ms (Linux's /proc, on the main thread only). */
function threadCpuMs(): number | undefined {
  return isMainThread ? cpuTimes()?.mainThread : undefined;
}

/** The `round`th of {@link ROUNDS} nearly equal parts of `events`. */
function share<T>(events: readonly T[], round: number): readonly T[] {
  const size = Math.ceil(events.length / ROUNDS);
  return events.slice(round * size, (round + 1) * size);
}

/** Batches of 10 new StockReceived messages, at least `messages` in all. */
function batchesOf(messages: number, groups: number): SQSEvent[] {
  return Array.from({ length: Math.ceil(messages / BATCH_SIZE) }, () =>
    fifoEvent(stockMessages(BATCH_SIZE, groups), QUEUE_ARN),
  );
}

async function deliver(handler: BatchHandler, events: readonly SQSEvent[]): Promise<void> {
  for (const event of events) await timeEvent(handler, event);
}
