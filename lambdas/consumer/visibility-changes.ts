import type { SourceQueue } from './dead-letter-queue.js';
import { sqsModule } from './dead-letter-queue.js';
import type { RecordTelemetry } from './telemetry.js';

/** A record the batch leaves unacknowledged, and how soon it should come back. */
export interface DelayedReturn {
  messageId: string;
  receiptHandle: string;
  /** The visibility to give it, from now. */
  seconds: number;
  telemetry: RecordTelemetry;
}

/** SQS's most entries in one `ChangeMessageVisibilityBatch`. */
const BATCH_ENTRIES = 10;

/**
 * Sets each returning record's visibility (DESIGN §5.1): one `ChangeMessageVisibilityBatch` per ten
 * records, at once. Never throws. A change not applied (the call failed, or SQS refused its entry)
 * is counted and logged: the record still fails, and comes back after the queue's visibility
 * timeout instead. One applied whose answer was lost is sent again by the SDK, which sets the same
 * visibility from a moment later.
 */
export async function delayReturns(queue: SourceQueue, returns: readonly DelayedReturn[]): Promise<void> {
  const chunks: DelayedReturn[][] = [];
  for (let start = 0; start < returns.length; start += BATCH_ENTRIES) {
    chunks.push(returns.slice(start, start + BATCH_ENTRIES));
  }
  await Promise.all(chunks.map((chunk) => changeVisibility(queue, chunk)));
}

async function changeVisibility(queue: SourceQueue, chunk: readonly DelayedReturn[]): Promise<void> {
  let refused: { Id?: string; Message?: string; Code?: string }[];
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
          VisibilityTimeout: entry.seconds,
        })),
      }),
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
      { visibilityTimeoutSeconds: entry.seconds, error: Message, code: Code },
    );
  }
}
