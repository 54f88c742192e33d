import { type BatchEnd, runUntilDeadline } from './batch-end.js';
import type { SourceQueue } from './dead-letter-queue.js';
import { sqsModule } from './dead-letter-queue.js';
import { cappedVisibilitySeconds } from './retry-delay.js';
import type { RecordTelemetry } from './telemetry.js';

/** A record the batch leaves unacknowledged, and how soon it should come back. */
export interface DelayedReturn {
  messageId: string;
  receiptHandle: string;
  /** The visibility to give it, from now. */
  seconds: number;
  /** When SQS stops letting it be kept invisible (`visibilityLimitMs`): `seconds` is cut there. */
  limitMs: number;
  telemetry: RecordTelemetry;
}

/** SQS's most entries in one `ChangeMessageVisibilityBatch`. */
const BATCH_ENTRIES = 10;

/**
 * Sets each returning record's visibility (DESIGN §5.1): one `ChangeMessageVisibilityBatch` per ten
 * records, `end.concurrency` at once, until the invocation's deadline draws near. Never throws. A
 * change not applied (the call failed, SQS refused its entry, or the deadline came first) is counted:
 * the record still fails, and comes back after the queue's visibility timeout instead. One applied
 * whose answer was lost is sent again by the SDK, which sets the same visibility from a moment later.
 */
export async function delayReturns(
  queue: SourceQueue,
  returns: readonly DelayedReturn[],
  end: BatchEnd,
): Promise<void> {
  const chunks: DelayedReturn[][] = [];
  for (let start = 0; start < returns.length; start += BATCH_ENTRIES) {
    chunks.push(returns.slice(start, start + BATCH_ENTRIES));
  }
  const unsent = (
    await runUntilDeadline(chunks, end, (chunk, signal) => changeVisibility(queue, chunk, signal))
  ).flat();
  for (const entry of unsent) entry.telemetry.count('visibilityChangeFailed');
  if (unsent.length > 0) {
    // One line, not one a record: the deadline is near.
    end.logger.warn(
      "the invocation's deadline came before these records' visibility was set: they come back after the queue's visibility timeout",
      { messageIds: unsent.map((entry) => entry.messageId) },
    );
  }
}

async function changeVisibility(
  queue: SourceQueue,
  chunk: readonly DelayedReturn[],
  signal: AbortSignal,
): Promise<void> {
  let refused: { Id?: string; Message?: string; Code?: string }[];
  const seconds = chunk.map((entry) => cappedVisibilitySeconds(entry.seconds, entry.limitMs, Date.now()));
  try {
    const [client, { ChangeMessageVisibilityBatchCommand }] = await Promise.all([
      queue.client(),
      sqsModule(),
    ]);
    const { Failed = [] } = await client.send(
      new ChangeMessageVisibilityBatchCommand({
        QueueUrl: queue.queueUrl,
        Entries: chunk.map((entry, index) => ({
          Id: String(index),
          ReceiptHandle: entry.receiptHandle,
          VisibilityTimeout: seconds[index],
        })),
      }),
      { abortSignal: signal },
    );
    refused = Failed;
  } catch (error) {
    refused = chunk.map((_, index) => ({ Id: String(index), Message: String(error) }));
  }
  for (const { Id, Message, Code } of refused) {
    const entry = chunk[Number(Id)];
    if (!entry) continue;
    entry.telemetry.count('visibilityChangeFailed');
    entry.telemetry.logger.warn(
      "could not set the record's visibility to its retry delay: it comes back after the queue's visibility timeout",
      { visibilityTimeoutSeconds: seconds[Number(Id)], error: Message, code: Code },
    );
  }
}
