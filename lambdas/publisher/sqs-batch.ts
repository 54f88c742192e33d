import {
  SendMessageBatchCommand,
  type SendMessageBatchCommandOutput,
  type SQSClient,
} from '@aws-sdk/client-sqs';
import { isThrottlingErrorCode, isTransientAwsError } from '../runtime/transient-aws-error';
import type { EntryOutcome, SendBatch } from './ordered-sender';

/**
 * SendMessageBatch as a SendBatch: each message's key is its MessageDeduplicationId, so sending
 * an entry again — after a lost answer, say — cannot enqueue it twice within SQS's 5-minute window.
 */
export function sqsBatchSender(sqs: SQSClient, queueUrl: string): SendBatch {
  return async (batch, signal) => {
    const entries = batch.map((message) => ({
      Id: `m${message.index}`,
      MessageBody: message.body,
      MessageGroupId: message.groupId,
      MessageDeduplicationId: message.key,
    }));
    let output: SendMessageBatchCommandOutput;
    try {
      output = await sqs.send(new SendMessageBatchCommand({ QueueUrl: queueUrl, Entries: entries }), {
        abortSignal: signal,
      });
    } catch (error) {
      const outcome = wholeCallFailure(error, signal);
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
      if (!failure) return { sent: false, retryable: true, reason: 'SQS answered nothing for this entry' };
      // A sender fault is permanent (e.g. InvalidMessageContents), unless it is throttling.
      const retryable = !failure.SenderFault || isThrottlingErrorCode(failure.Code);
      return { sent: false, retryable, reason: `${failure.Code}: ${failure.Message ?? 'no message'}` };
    });
  };
}

function wholeCallFailure(error: unknown, signal: AbortSignal): EntryOutcome {
  const description = error instanceof Error ? `${error.name}: ${error.message}` : String(error);
  if (signal.aborted) {
    const reason = `${description}; cut off at the invocation's deadline, so whether SQS got it is unknown`;
    return { sent: false, retryable: false, reason };
  }
  return { sent: false, retryable: isTransientAwsError(error), reason: description };
}
