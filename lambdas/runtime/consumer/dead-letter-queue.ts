import { SendMessageCommand, type SQSClient } from '@aws-sdk/client-sqs';
import type { SQSRecord } from 'aws-lambda';
import type { StoredError } from '../idempotency';
import { sha256Hex } from '../idempotency/keys';

/** The message attributes a record sent to the DLQ carries, so an operator sees why without the logs. */
export const DLQ_ATTRIBUTES = {
  errorName: 'ErrorName',
  errorMessage: 'ErrorMessage',
  originalMessageId: 'OriginalMessageId',
  receiveCount: 'ReceiveCount',
} as const;

/** Error messages are cut here: they ride along with the body, which may be near SQS's size limit already. */
const MAX_ERROR_MESSAGE_LENGTH = 1_024;

export interface DeadLetterQueueOptions {
  client: SQSClient;
  /** The FIFO DLQ's URL. */
  queueUrl: string;
}

/**
 * Sends non-retryable records to the DLQ at once (DESIGN §5), instead of letting them block their
 * group for maxReceiveCount × the visibility timeout before SQS moves them there itself.
 */
export class DeadLetterQueue {
  constructor(private readonly options: DeadLetterQueueOptions) {}

  async send(record: SQSRecord, groupId: string, error: StoredError): Promise<void> {
    const text = (value: string) => ({ DataType: 'String', StringValue: value });
    await this.options.client.send(
      new SendMessageCommand({
        QueueUrl: this.options.queueUrl,
        MessageBody: record.body,
        MessageGroupId: groupId,
        // Per delivery, not per message: with the key (or the message id, which a redrive may keep)
        // SQS would drop the DLQ copy of a message redriven and rejected again within 5 minutes, and
        // lose it. A receipt handle is unique per receive; the SDK's retries of this send reuse it.
        MessageDeduplicationId: sha256Hex(record.receiptHandle),
        MessageAttributes: {
          [DLQ_ATTRIBUTES.errorName]: text(error.name),
          [DLQ_ATTRIBUTES.errorMessage]: text(error.message.slice(0, MAX_ERROR_MESSAGE_LENGTH)),
          [DLQ_ATTRIBUTES.originalMessageId]: text(record.messageId),
          [DLQ_ATTRIBUTES.receiveCount]: {
            DataType: 'Number',
            StringValue: record.attributes.ApproximateReceiveCount,
          },
        },
      }),
    );
  }
}
