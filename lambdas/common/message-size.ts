import type { MessageAttributeValue } from '@aws-sdk/client-sqs';

/**
 * A message's size as SQS counts it against the queue's limit: the body, and each message
 * attribute's name, data type and value. System attributes (`AWSTraceHeader`) do not count.
 */
export function sqsMessageBytes(
  body: string,
  attributes: Readonly<Record<string, MessageAttributeValue>> = {},
): number {
  let bytes = Buffer.byteLength(body);
  for (const [name, value] of Object.entries(attributes)) {
    bytes += Buffer.byteLength(name) + Buffer.byteLength(value.DataType ?? '');
    bytes +=
      value.StringValue !== undefined
        ? Buffer.byteLength(value.StringValue)
        : (value.BinaryValue?.length ?? 0);
  }
  return bytes;
}
