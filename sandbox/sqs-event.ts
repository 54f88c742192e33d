import type { Message, MessageAttributeValue } from '@aws-sdk/client-sqs';
import type { SQSEvent, SQSMessageAttributes, SQSRecord } from 'aws-lambda';

/** The record Lambda's event source mapping builds from a received message. */
export function toSqsRecord(message: Message, queueArn: string, region: string): SQSRecord {
  const { MessageId, ReceiptHandle, Body, MD5OfBody, Attributes = {} } = message;
  if (!MessageId || !ReceiptHandle || Body === undefined) {
    throw new Error(`ReceiveMessage returned an incomplete message: ${JSON.stringify(message)}`);
  }
  return {
    messageId: MessageId,
    receiptHandle: ReceiptHandle,
    body: Body,
    attributes: {
      ApproximateReceiveCount: Attributes.ApproximateReceiveCount ?? '1',
      SentTimestamp: Attributes.SentTimestamp ?? '',
      SenderId: Attributes.SenderId ?? '',
      ApproximateFirstReceiveTimestamp: Attributes.ApproximateFirstReceiveTimestamp ?? '',
      SequenceNumber: Attributes.SequenceNumber,
      MessageGroupId: Attributes.MessageGroupId,
      MessageDeduplicationId: Attributes.MessageDeduplicationId,
      AWSTraceHeader: Attributes.AWSTraceHeader,
      DeadLetterQueueSourceArn: Attributes.DeadLetterQueueSourceArn,
    },
    messageAttributes: toRecordAttributes(message.MessageAttributes ?? {}),
    md5OfBody: MD5OfBody ?? '',
    eventSource: 'aws:sqs',
    eventSourceARN: queueArn,
    awsRegion: region,
  };
}

function toRecordAttributes(attributes: Record<string, MessageAttributeValue>): SQSMessageAttributes {
  return Object.fromEntries(
    Object.entries(attributes).map(([name, value]) => [
      name,
      {
        dataType: value.DataType ?? 'String',
        stringValue: value.StringValue,
        binaryValue: value.BinaryValue && Buffer.from(value.BinaryValue).toString('base64'),
        stringListValues: [],
        binaryListValues: [],
      },
    ]),
  );
}

/**
 * Lambda's reading of a partial batch response: the ids of the records to keep, or `all` when
 * the response names a record that is not in the batch (then the whole batch counts as failed).
 * No `batchItemFailures` at all means every record succeeded.
 */
export function failedMessageIds(result: unknown, event: SQSEvent): Set<string> | 'all' {
  const failures = (result as { batchItemFailures?: unknown } | null | undefined)?.batchItemFailures;
  if (failures === undefined || failures === null) return new Set();
  if (!Array.isArray(failures)) return 'all';
  const inBatch = new Set(event.Records.map((record) => record.messageId));
  const ids = new Set<string>();
  for (const failure of failures) {
    const id = (failure as { itemIdentifier?: unknown })?.itemIdentifier;
    if (typeof id !== 'string' || !inBatch.has(id)) return 'all';
    ids.add(id);
  }
  return ids;
}
