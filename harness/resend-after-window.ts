import { SendMessageBatchCommand, type SQSClient } from '@aws-sdk/client-sqs';
import { createEnvelope, type OutgoingMessage } from 'oncely/client';

/**
 * Sends envelopes straight to the queue with fresh deduplication ids, as if after SQS's 5-minute
 * window: SQS lets them through, the consumer must not run them again.
 */
export async function resendAfterDedupWindow(sqs: SQSClient, queueUrl: string, messages: OutgoingMessage[]) {
  for (let i = 0; i < messages.length; i += 10) {
    await sqs.send(
      new SendMessageBatchCommand({
        QueueUrl: queueUrl,
        Entries: messages.slice(i, i + 10).map((message, index) => ({
          Id: String(index),
          MessageBody: JSON.stringify(createEnvelope(message)),
          MessageGroupId: message.groupId,
          MessageDeduplicationId: `late-${message.key}`,
        })),
      }),
    );
  }
}
