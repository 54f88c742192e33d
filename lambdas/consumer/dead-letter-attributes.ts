import type { MessageAttributeValue } from '@aws-sdk/client-sqs';
import type { SQSMessageAttributes } from 'aws-lambda';

/** SQS's most message attributes on one message. */
export const MAX_MESSAGE_ATTRIBUTES = 10;

/**
 * The attributes of a DLQ copy: the producer's, all of them (a redrive hands the message back to
 * its consumers, who may read them), and the consumer's own after them, in their order, as long as
 * SQS's 10 allow — past that the last of its own are dropped (the log has the whole error). One of
 * its own replaces the producer's of the same name: a redriven message carries those of its earlier
 * dead-lettering, which are stale.
 */
export function deadLetterAttributes(
  producer: SQSMessageAttributes | undefined,
  own: Readonly<Record<string, MessageAttributeValue>>,
): Record<string, MessageAttributeValue> {
  const attributes = sendableAttributes(producer);
  for (const [name, value] of Object.entries(own)) {
    const room = name in attributes || Object.keys(attributes).length < MAX_MESSAGE_ATTRIBUTES;
    if (room) attributes[name] = value;
  }
  return attributes;
}

/** A record's attributes as `SendMessage` takes them: the event has binary values in base64. */
function sendableAttributes(attributes: SQSMessageAttributes = {}): Record<string, MessageAttributeValue> {
  return Object.fromEntries(
    Object.entries(attributes).map(([name, { dataType, stringValue, binaryValue }]) => [
      name,
      {
        DataType: dataType,
        ...(stringValue === undefined ? {} : { StringValue: stringValue }),
        ...(binaryValue === undefined ? {} : { BinaryValue: Buffer.from(binaryValue, 'base64') }),
      },
    ]),
  );
}
