import {
  SendMessageBatchCommand,
  type SendMessageBatchCommandOutput,
  type SQSClient,
} from '@aws-sdk/client-sqs';
import { groupingFor } from '../common/queue-type.js';
import { sqsTraceAttributes } from '../common/trace-context.js';
import { isThrottlingErrorCode, isTransientAwsError } from '../common/transient-aws-error.js';
import type { EntryOutcome, SendBatch } from './ordered-sender.js';
import { watchArrival } from './request-arrival.js';

/** SendMessageBatch answers in milliseconds; 5 s leaves room for 1 MiB batches and slow moments. */
export const DEFAULT_SQS_CALL_TIMEOUT_MS = 5_000;

/**
 * SendMessageBatch as a SendBatch. On a FIFO queue each message's key is its
 * MessageDeduplicationId, so sending an entry again — after a lost answer, say — cannot enqueue it
 * twice within SQS's 5-minute window. A standard queue (its URL does not end in `.fifo`) refuses a
 * deduplication id: there the entry carries its group as the fair-queue tenant key only, and a
 * re-sent entry SQS had enqueued is on the queue twice, under one key, for the consumer's record
 * to recognise (DESIGN §5.1).
 *
 * A failed call may have been applied when the request reached SQS (see watchArrival): its entries
 * are then `maybeSent`. Entries SQS lists in `Failed` are taken as not enqueued: that list is SQS's
 * own account of the entries it refused, and an entry it enqueued is in `Successful`.
 *
 * Each call gets at most `callTimeoutMs`: one that stalls (a half-open connection, say) is cut off
 * then, as one failed attempt that may have reached SQS, and retried within the invocation's time.
 */
export function sqsBatchSender(
  sqs: SQSClient,
  queueUrl: string,
  callTimeoutMs = DEFAULT_SQS_CALL_TIMEOUT_MS,
): SendBatch {
  return async (batch, signal) => {
    const entries = batch.map((message) => ({
      Id: `m${message.index}`,
      MessageBody: message.body,
      ...groupingFor(queueUrl, message.groupId, message.key),
      ...sqsTraceAttributes(message.trace),
    }));
    if (signal.aborted) {
      const reason = 'not sent: the invocation ran out of time';
      return entries.map((): EntryOutcome => ({ sent: false, retryable: false, maybeSent: false, reason }));
    }
    const command = new SendMessageBatchCommand({ QueueUrl: queueUrl, Entries: entries });
    const mayHaveArrived = watchArrival(command);
    const callTimeout = AbortSignal.timeout(callTimeoutMs);
    let output: SendMessageBatchCommandOutput;
    try {
      output = await sqs.send(command, { abortSignal: AbortSignal.any([signal, callTimeout]) });
    } catch (error) {
      const outcome = signal.aborted
        ? wholeCallFailure(error, signal, mayHaveArrived())
        : callTimeout.aborted
          ? stalledCall(error, callTimeoutMs, mayHaveArrived())
          : wholeCallFailure(error, signal, mayHaveArrived());
      return entries.map(() => outcome);
    }
    const accepted = new Map(output.Successful?.map((entry) => [entry.Id, entry]));
    const refused = new Map(output.Failed?.map((entry) => [entry.Id, entry]));
    return entries.map(({ Id }): EntryOutcome => {
      const success = accepted.get(Id);
      if (success?.MessageId) {
        return { sent: true, messageId: success.MessageId, sequenceNumber: success.SequenceNumber };
      }
      const failure = refused.get(Id);
      if (!failure) {
        // SQS got the call and did not say what became of the entry: it may have enqueued it.
        return {
          sent: false,
          retryable: true,
          maybeSent: true,
          reason: 'SQS answered nothing for this entry',
        };
      }
      // A sender fault is permanent (e.g. InvalidMessageContents), unless it is throttling.
      const retryable = !failure.SenderFault || isThrottlingErrorCode(failure.Code);
      const reason = `${failure.Code}: ${failure.Message ?? 'no message'}`;
      return { sent: false, retryable, maybeSent: false, reason };
    });
  };
}

/** A call cut off by its own bound: a failed attempt like a timeout, retried; SQS may have it. */
function stalledCall(error: unknown, callTimeoutMs: number, mayHaveArrived: boolean): EntryOutcome {
  const description = error instanceof Error ? `${error.name}: ${error.message}` : String(error);
  const reason = `${description}; no answer within ${callTimeoutMs} ms`;
  return { sent: false, retryable: true, maybeSent: mayHaveArrived, reason };
}

function wholeCallFailure(error: unknown, signal: AbortSignal, mayHaveArrived: boolean): EntryOutcome {
  const description = error instanceof Error ? `${error.name}: ${error.message}` : String(error);
  if (signal.aborted) {
    const reason = mayHaveArrived
      ? `${description}; cut off at the invocation's deadline, so whether SQS got it is unknown`
      : `${description}; not sent: the invocation ran out of time`;
    return { sent: false, retryable: false, maybeSent: mayHaveArrived, reason };
  }
  return {
    sent: false,
    retryable: isTransientAwsError(error),
    maybeSent: mayHaveArrived,
    reason: description,
  };
}
