import { randomUUID } from 'node:crypto';
import { SendMessageCommand } from '@aws-sdk/client-sqs';
import { RECORD_WRITE_RETRY, retried } from '../lambdas/common/backoff.js';
import { groupingFor } from '../lambdas/common/queue-type.js';
import { sqsTraceAttributes } from '../lambdas/common/trace-context.js';
import type { IdempotencyRecord, KeptMessage } from '../lambdas/idempotency/record.js';
import { refusePastHorizon, restamped } from './in-doubt-horizon.js';
import {
  type InDoubtTarget,
  locateRecord,
  messageNotKept,
  type Resolution,
  resolvable,
  resolvedExpiresAt,
  stateOf,
  ttlSecondsOf,
} from './in-doubt-records.js';
import { ResendFailedError, ResolutionConflictError } from './operations-errors.js';
import type { OperatorRecords } from './operator-records.js';

export interface RetryOptions {
  /** Send the message stamped with `publishedAt` = now: for one past the dedup horizon (`--republish`). */
  republish?: boolean;
}

/**
 * `--as retry`: the effect did not happen; run it again (DESIGN §3). Nothing is deleted before the
 * message is safely back on the queue:
 *  (a) the IN_DOUBT record becomes FAILED, keeping its message, marked RETRY_PENDING (so it stays listed),
 *      with no expiry (as an IN_DOUBT record of this version has none already);
 *  (b) the kept message is sent to the queue, in its group;
 *  (c) the RETRY_PENDING mark and the message are removed, and the record gets a full TTL again.
 * A FAILED record is acquirable with the same payload, so the consumer runs the re-sent message.
 * A run that failed or was killed after (a) left a RETRY_PENDING record: running again skips (a).
 * Two retries at once may both send: harmless, the consumer runs the second copy as a duplicate.
 * Every write is conditioned on the state it expects; the resolution says the record's state as
 * (c) found it, so a record another operator made COMPLETED meanwhile is reported so.
 */
export async function resolveAsRetry(
  target: InDoubtTarget,
  id: string,
  options: RetryOptions = {},
): Promise<Resolution> {
  const nowMs = Date.now();
  const expiresAt = resolvedExpiresAt(target, nowMs);
  // Read before any write, so that a retry the consumer would never run is refused unchanged. The
  // kept message never changes while the record is unresolved. The writes go to the store holding it.
  const { store, record } = await locateRecord(target, id, nowMs);
  const read = resolvable(record, id, nowMs);
  if (!read.message) throw messageNotKept(id);
  if (!options.republish) refusePastHorizon(id, read.message.body, ttlSecondsOf(target), nowMs);
  const message = await markRetryPending(store, id, nowMs);
  const body = options.republish ? restamped(message.body, nowMs) : message.body;
  let messageId: string;
  try {
    const { MessageId } = await target.sqs.send(
      new SendMessageCommand({
        QueueUrl: target.resources.queueUrl,
        MessageBody: body,
        // FIFO: the deduplication id fresh, as the message's own ids may still be in SQS's 5-minute
        // window; one per run, so that the SDK's retries of this send (an answer lost) leave one copy
        // on the queue. A standard queue takes none (a retried send is a second copy, a duplicate to
        // the consumer), and a group only when the kept message has one (DESIGN §5.1).
        ...groupingFor(target.resources.queueUrl, message.groupId, randomUUID()),
        // The producer's trace context, as the message arrived with it (DESIGN §6).
        ...sqsTraceAttributes(message.traceContext),
      }),
    );
    messageId = String(MessageId);
  } catch (error) {
    throw new ResendFailedError(
      `Could not send the message of ${id} back to the queue (${String(error)}). Nothing is lost: the record ` +
        `is RETRY_PENDING and keeps its message. Run \`oncely in-doubt resolve ${id} --as retry` +
        `${options.republish ? ' --republish' : ''}\` again.`,
      { cause: error },
    );
  }
  const { status, notCleared } = await clearRetryPending(store, id, expiresAt, nowMs);
  return {
    id,
    as: 'retry',
    groupId: message.groupId,
    messageId,
    status,
    ...(notCleared ? { notCleared } : {}),
    ...(options.republish ? { republished: true as const } : {}),
  };
}

/** Step (a); returns the kept message. A record already RETRY_PENDING is left as it is. */
async function markRetryPending(store: OperatorRecords, id: string, nowMs: number): Promise<KeptMessage> {
  let record: IdempotencyRecord | undefined;
  const write = await store.markRetryPending(id, nowMs);
  if (write.written) {
    record = write.record;
  } else {
    // Not IN_DOUBT with a message: an earlier run's RETRY_PENDING is finished; anything else changed
    // since this command read it (IN_DOUBT, or RETRY_PENDING): someone else got there first.
    const now = write.now;
    if (stateOf(now, nowMs) !== 'RETRY_PENDING') {
      throw new ResolutionConflictError(
        `${id} changed while this command resolved it: it is now ${stateOf(now, nowMs)} (another ` +
          '`oncely in-doubt resolve`, or the consumer, got there first). Nothing was sent; ' +
          '`oncely in-doubt list` shows whether it still needs resolving.',
        { cause: write.cause },
      );
    }
    record = resolvable(now, id, nowMs);
  }
  if (!record?.message) throw messageNotKept(id);
  return record.message;
}

/**
 * Step (c): takes the record off the list once its message is on the queue, and returns its state.
 * If the condition fails, someone else changed it after (a): the consumer acquired it (the goal
 * reached), another retry cleared it (FAILED), or an operator resolved it `--as completed`; the
 * state it found says which. Any other failure is tried again (3 tries in all, as the core's record
 * writes), then returned, not thrown: the message was sent, and the record leaves the list when the
 * consumer runs it. A try applied with its answer lost finds the mark gone: FAILED, done.
 */
async function clearRetryPending(
  store: OperatorRecords,
  id: string,
  expiresAt: number,
  nowMs: number,
): Promise<{ status: string; notCleared?: string }> {
  const cleared = await retried(RECORD_WRITE_RETRY, async () => {
    const write = await store.clearRetryPending(id, expiresAt);
    return { status: write.written ? 'FAILED' : stateOf(write.now, nowMs) };
  });
  if (cleared.value) return cleared.value;
  return { status: 'RETRY_PENDING', notCleared: String(cleared.error) };
}
