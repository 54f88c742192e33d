import { createHash, randomUUID } from 'node:crypto';
import type { _Record } from '@aws-sdk/client-dynamodb-streams';
import { SendMessageCommand, type SQSClient } from '@aws-sdk/client-sqs';
import type { DynamoDBRecord, DynamoDBStreamEvent } from 'aws-lambda';
import type { RecordFilter } from './event-filter.js';
import { functionError, type InvocationResult } from './lambda-context.js';
import { pause } from './pause.js';
import { type DiscardedBatch, onFailureRecord, retryFromIndex, toDynamoDbRecord } from './stream-event.js';
import type { ShardReader } from './stream-shard-reader.js';
import type { LocalStreamSource } from './stream-source.js';

/** What one invocation did to a batch of a shard, for progress reports and tests. */
export interface StreamBatchReport {
  shardId: string;
  /** Records the function was given. */
  records: number;
  /** Done with: before the first reported failure, or all of them after a success. */
  checkpointed: number;
  /** To be given again: from the first reported failure on, or the whole batch after a function error. */
  retrying: number;
  /** Given up on after the last retry, and sent to the on-failure destination if there is one. */
  discarded: number;
  /** Which invocation of this batch it was: 1, then 2 for its first retry, … */
  attempt: number;
  functionError?: string;
}

export interface ShardPollerOptions {
  sqs: SQSClient;
  source: LocalStreamSource;
  region: string;
  filter: RecordFilter;
  invoke: (event: DynamoDBStreamEvent, awsRequestId: string) => Promise<InvocationResult>;
  onBatch?: (report: StreamBatchReport) => void;
  /** Aborted when the poller stops: every wait and read ends at once. */
  signal: AbortSignal;
}

/** Lambda reads each shard of a DynamoDB stream four times a second. */
const IDLE_READ_INTERVAL_MS = 250;

/** The wait before a failed batch's next try: doubling from 100 ms, at most 2 s. */
const retryDelayMs = (attempt: number) => Math.min(100 * 2 ** (attempt - 1), 2000);

/**
 * Runs one shard as Lambda's stream poller does: records in order, those no filter matches dropped,
 * batches of up to `batchSize` once full, the shard finished or the batching window over. With a
 * ParallelizationFactor of N, the shard's records are split into N lanes by a hash of their item's
 * key, and up to N batches (one per lane) run at once: each item's records stay in order, in one
 * lane, while records of different items may be processed out of order, as on AWS. A lane's
 * failures, retries and bisections hold up only its own records. With 1 (the default), one batch
 * of the shard at a time. Resolves true once a closed shard is read to its end and delivered,
 * false on stop (after the invocations in progress).
 */
export async function pollShard(reader: ShardReader, options: ShardPollerOptions): Promise<boolean> {
  const { source, signal } = options;
  const windowMs = source.maximumBatchingWindowInSeconds * 1000;
  const lanes: Lane[] = Array.from({ length: Math.max(1, source.parallelizationFactor) }, () => ({
    pending: [],
    windowEnd: 0,
  }));
  const due = (lane: Lane) =>
    lane.pending.length > 0 &&
    (lane.pending.length >= source.batchSize || reader.finished || Date.now() >= lane.windowEnd);
  const deliveries = () => lanes.flatMap((lane) => (lane.delivering ? [lane.delivering] : []));
  while (!signal.aborted) {
    for (const lane of lanes.filter((candidate) => !candidate.delivering && due(candidate))) {
      lane.delivering = deliverBatch(lane.pending, reader.shardId, options)
        .catch((error: unknown) =>
          console.error(`[oncely sandbox] ${source.logicalId}'s ${reader.shardId}: ${String(error)}`),
        )
        .finally(() => {
          lane.delivering = undefined;
        });
    }
    const delivering = deliveries();
    if (reader.finished && delivering.length === 0) return true;
    // Reads go on while a lane is free: with one lane, not while its batch is out.
    if (reader.finished || delivering.length === lanes.length) {
      await Promise.race(delivering);
      continue;
    }
    let read: _Record[];
    try {
      read = await reader.read(signal);
    } catch (error) {
      if (!signal.aborted) {
        console.error(
          `[oncely sandbox] reading ${source.logicalId}'s ${reader.shardId} failed: ${String(error)}`,
        );
      }
      await pause(IDLE_READ_INTERVAL_MS, signal);
      continue;
    }
    const readAt = Date.now() / 1000;
    for (const record of read
      .map((raw) => toDynamoDbRecord(raw, source.streamArn, options.region))
      .filter(options.filter)) {
      const lane = lanes[laneOf(record, lanes.length)];
      if (lane.pending.length === 0) lane.windowEnd = Date.now() + windowMs;
      lane.pending.push({ record, arrivedAt: arrival(record, readAt) });
    }
    if (read.length === 0 && !reader.finished) {
      const untilDue = lanes
        .filter((lane) => lane.pending.length > 0 && !lane.delivering)
        .map((lane) => lane.windowEnd - Date.now());
      await Promise.race([pause(Math.min(IDLE_READ_INTERVAL_MS, ...untilDue), signal), ...deliveries()]);
    }
  }
  await Promise.all(deliveries());
  return false;
}

/** The records of the items a lane holds, not yet checkpointed, and its batch in progress. */
interface Lane {
  pending: PendingRecord[];
  /** When its batching window, opened by its first pending record, is over (epoch ms). */
  windowEnd: number;
  delivering?: Promise<void>;
}

/**
 * The lane of a record's item: a hash of its key (partition and sort key), so that an item's
 * records always share one lane.
 * https://docs.aws.amazon.com/lambda/latest/dg/with-ddb.html (concurrent reading of a shard)
 */
export function laneOf(record: DynamoDBRecord, lanes: number): number {
  if (lanes === 1) return 0;
  const keys = record.dynamodb?.Keys ?? {};
  const key = JSON.stringify(
    Object.keys(keys)
      .sort()
      .map((name) => [name, keys[name]]),
  );
  return createHash('sha256').update(key).digest().readUInt32BE(0) % lanes;
}

/** A record waiting for the function, with the latest time it can have been written (epoch seconds). */
interface PendingRecord {
  record: DynamoDBRecord;
  arrivedAt: number;
}

/**
 * DynamoDB Local rounds a record's creation time down to the minute: the record was written within
 * the minute after it, and before it was read. The later bound keeps records from looking older
 * than they are, so that none is discarded for its age before Lambda would.
 */
function arrival(record: DynamoDBRecord, readAt: number): number {
  const created = record.dynamodb?.ApproximateCreationDateTime;
  return created === undefined ? readAt : Math.min(created + 60, readAt);
}

/**
 * Gives the function the batch at the head of `pending` until it is done with it, and removes what it
 * is done with. A function error retries the whole batch (halved first with
 * BisectBatchOnFunctionError); a partial batch response checkpoints before the lowest reported
 * record and retries from it. Each retry counts against MaximumRetryAttempts; past it, or past
 * MaximumRecordAgeInSeconds, the batch is discarded.
 */
async function deliverBatch(
  pending: PendingRecord[],
  shardId: string,
  options: ShardPollerOptions,
): Promise<void> {
  const { source, signal } = options;
  let size = Math.min(source.batchSize, pending.length);
  let invokeCount = 0;
  let lastInvocation: DiscardedBatch['lastInvocation'];
  while (!signal.aborted) {
    const expired = expiredCount(pending.slice(0, size), source.maximumRecordAgeInSeconds);
    if (expired > 0) {
      await discard(options, {
        condition: 'RecordAgeExceeded',
        records: pending.splice(0, expired).map(({ record }) => record),
        shardId,
        invokeCount,
        lastInvocation,
      });
      size -= expired;
      if (size === 0) return;
    }
    const batch = pending.slice(0, size).map(({ record }) => record);
    const requestId = randomUUID();
    const outcome = await options
      .invoke({ Records: batch }, requestId)
      .catch((thrown: unknown): InvocationResult => ({ ok: false, error: functionError(thrown) }));
    invokeCount++;
    const report = { shardId, records: batch.length, attempt: invokeCount };
    // Without ReportBatchItemFailures, a successful invocation succeeded for every record.
    const retryFrom = !outcome.ok
      ? 0
      : source.reportBatchItemFailures
        ? retryFromIndex(outcome.result, batch)
        : undefined;
    if (retryFrom === undefined) {
      pending.splice(0, size);
      options.onBatch?.({ ...report, checkpointed: size, retrying: 0, discarded: 0 });
      return;
    }
    pending.splice(0, retryFrom);
    size -= retryFrom;
    lastInvocation = { requestId, functionError: !outcome.ok };
    const failure = outcome.ok
      ? {}
      : { functionError: `${outcome.error.errorType}: ${outcome.error.errorMessage}` };
    if (source.maximumRetryAttempts >= 0 && invokeCount > source.maximumRetryAttempts) {
      await discard(options, {
        condition: 'RetryAttemptsExhausted',
        records: pending.splice(0, size).map(({ record }) => record),
        shardId,
        invokeCount,
        lastInvocation,
      });
      options.onBatch?.({ ...report, ...failure, checkpointed: retryFrom, retrying: 0, discarded: size });
      return;
    }
    options.onBatch?.({ ...report, ...failure, checkpointed: retryFrom, retrying: size, discarded: 0 });
    // A partial response already says where to resume: bisecting is for function errors.
    if (!outcome.ok && source.bisectBatchOnFunctionError && size > 1) size = Math.ceil(size / 2);
    await pause(retryDelayMs(invokeCount), signal);
  }
}

/** How many records at the head of the batch are older than the mapping's maximum record age. */
function expiredCount(batch: PendingRecord[], maximumAgeSeconds: number): number {
  if (maximumAgeSeconds < 0) return 0;
  const oldestAllowed = Date.now() / 1000 - maximumAgeSeconds;
  const index = batch.findIndex((pending) => pending.arrivedAt >= oldestAllowed);
  return index < 0 ? batch.length : index;
}

/** Sends a discarded batch's invocation record to the on-failure destination; without one, Lambda drops it. */
async function discard(
  options: ShardPollerOptions,
  batch: Omit<DiscardedBatch, 'streamArn' | 'functionArn'>,
): Promise<void> {
  const { source } = options;
  if (!source.onFailure) return;
  const record = onFailureRecord({ ...batch, streamArn: source.streamArn, functionArn: source.functionArn });
  try {
    await options.sqs.send(
      new SendMessageCommand({ QueueUrl: source.onFailure.url, MessageBody: JSON.stringify(record) }),
    );
  } catch (error) {
    console.error(
      `[oncely sandbox] ${source.logicalId}: sending a discarded batch to ${source.onFailure.name} failed: ${String(error)}`,
    );
  }
}
