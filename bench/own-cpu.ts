import { isMainThread } from 'node:worker_threads';
import type { SQSEvent } from 'aws-lambda';
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
import { createLeaseConsumerHandler } from './consumers/lease-consumer.js';
import {
  attributeProfile,
  CODE_ORIGINS,
  type CodeOrigin,
  type FunctionTime,
  profileWhile,
} from './cpu-profile.js';
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
  /** First deliveries profiled per mode, in batches of 10. */
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
  /** The thread's CPU time per message from Linux's /proc; none elsewhere, or off the main thread. */
  threadCpuMsPerMessage?: number;
  /** The profile's busy time per message: its samples' time, the event loop's idle time left out. */
  sampledMsPerMessage: number;
  /**
   * CPU per message by origin, in ms: the profile's shares of the thread's CPU time (of its own busy
   * time without /proc). The samples are wall time: on a shared machine a thread descheduled in the
   * middle of a function counts there, which the thread's CPU time corrects for all origins alike.
   */
  msPerMessage: Record<CodeOrigin, number>;
  /** Oncely's functions with the most self time, in ms per message. */
  topOncelyFunctions: FunctionTime[];
}

/** Fine enough that 0.15 ms of a message's CPU spreads over several samples. */
const SAMPLING_INTERVAL_US = 100;
const TOP_FUNCTIONS = 5;

/**
 * (5b) Oncely's own CPU per message in each mode: each consumer in this process, on this thread,
 * invoked with batches of first deliveries against DynamoDB Local (no latency added), under V8's
 * sampling profiler; each sample's time goes to the script of the function it caught running
 * (`cpu-profile.ts`). The example consumer imports the package's compiled modules (`oncely/*`),
 * the lease-mode one its TypeScript sources: either way each function keeps its own script, so the
 * attribution needs no source map (a bundle puts every package in one script, and its map would
 * have to be trusted to place each function). The events are built before the profile starts.
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
        const handler: BatchHandler =
          consumer === 'transactional'
            ? exampleConsumerHandler(client, tables, { sqs, dlqUrl: dlq.url })
            : createLeaseConsumerHandler({
                ...tables,
                mode: consumer === 'leaseAtLeastOnce' ? 'at-least-once' : 'at-most-once',
                dynamodb: client,
                sqs,
                dlqUrl: dlq.url,
                ...silentTelemetry(),
              });
        const warmup = batchesOf(options.warmupMessages, options.groups);
        await deliver(handler, warmup);
        const requests = countRequests(client);
        const events = batchesOf(options.messages, options.groups);
        const messages = events.length * BATCH_SIZE;
        const before = isMainThread ? cpuTimes() : undefined;
        const { profile } = await profileWhile(SAMPLING_INTERVAL_US, () => deliver(handler, events));
        const after = isMainThread ? cpuTimes() : undefined;
        const requestsPerMessage = requests.total() / messages;
        const applied = await sumOfAttribute(client, tables.ledgerTableName, 'available');
        const delivered = (warmup.length + events.length) * BATCH_SIZE;
        if (applied !== delivered) {
          throw new Error(
            `${consumer}: the ledger holds ${applied} units after ${delivered} messages of one`,
          );
        }
        const { busyMs, top } = attributeProfile(profile, options.projectRoot, 'oncely', TOP_FUNCTIONS);
        const sampledMs = Object.values(busyMs).reduce((sum, ms) => sum + ms, 0);
        const threadMs = before && after ? after.mainThread - before.mainThread : undefined;
        const scale = (threadMs ?? sampledMs) / sampledMs / messages;
        rows.push({
          consumer,
          messages,
          requestsPerMessage,
          threadCpuMsPerMessage: threadMs === undefined ? undefined : threadMs / messages,
          sampledMsPerMessage: sampledMs / messages,
          msPerMessage: Object.fromEntries(
            (Object.keys(CODE_ORIGINS) as CodeOrigin[]).map((origin) => [origin, busyMs[origin] * scale]),
          ) as Record<CodeOrigin, number>,
          topOncelyFunctions: top.map((entry) => ({ ...entry, ms: entry.ms * scale })),
        });
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

/** Batches of 10 new StockReceived messages, at least `messages` in all. */
function batchesOf(messages: number, groups: number): SQSEvent[] {
  return Array.from({ length: Math.ceil(messages / BATCH_SIZE) }, () =>
    fifoEvent(stockMessages(BATCH_SIZE, groups), QUEUE_ARN),
  );
}

async function deliver(handler: BatchHandler, events: readonly SQSEvent[]): Promise<void> {
  for (const event of events) await timeEvent(handler, event);
}
