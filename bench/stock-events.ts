import type { SQSEvent } from 'aws-lambda';
import { createEnvelope } from '../lambdas/common/envelope.js';
import type { PublishMessage } from '../lambdas/publisher/contract.js';
import { LOCAL_REGION } from '../sandbox/local-aws-config.js';
import { uniqueName } from './resources.js';

/**
 * The benchmarks' workload: `StockReceived`, the example consumer's event with one ledger write
 * (`ADD available :quantity` on the SKU's stock item). Every consumer compared does that write.
 */
export const STOCK_RECEIVED = 'StockReceived';

/**
 * `count` new StockReceived messages (quantity 1 each) dealt round-robin over `groups` message
 * groups, one SKU per group: groups that run at once never write the same item, so no transaction
 * conflicts blur the timings. Keys are unique to this call.
 */
export function stockMessages(count: number, groups: number): PublishMessage[] {
  const run = uniqueName('stock');
  return Array.from({ length: count }, (_, index) => {
    const group = index % groups;
    return {
      type: STOCK_RECEIVED,
      groupId: `${run}-g${group}`,
      key: `${run}-${index}`,
      payload: { sku: `${run}-sku${group}`, quantity: 1 },
    };
  });
}

/** The event Lambda's event source mapping would deliver for these messages: first deliveries, in order. */
export function fifoEvent(messages: readonly PublishMessage[], queueArn: string): SQSEvent {
  const sentAt = String(Date.now());
  return {
    Records: messages.map((message, index) => {
      const envelope = createEnvelope(message);
      return {
        messageId: `${envelope.key}-message`,
        receiptHandle: `${envelope.key}-receipt`,
        body: JSON.stringify(envelope),
        attributes: {
          ApproximateReceiveCount: '1',
          SentTimestamp: sentAt,
          SenderId: 'bench',
          ApproximateFirstReceiveTimestamp: sentAt,
          SequenceNumber: String(index + 1).padStart(20, '0'),
          MessageGroupId: message.groupId,
          MessageDeduplicationId: envelope.key,
        },
        messageAttributes: {},
        md5OfBody: '',
        eventSource: 'aws:sqs',
        eventSourceARN: queueArn,
        awsRegion: LOCAL_REGION,
      };
    }),
  };
}

/**
 * The event a standard queue's event source mapping would deliver for these messages: `fifoEvent`'s
 * records without the FIFO attributes (sequence number, group, deduplication id).
 */
export function standardEvent(messages: readonly PublishMessage[], queueArn: string): SQSEvent {
  return {
    Records: fifoEvent(messages, queueArn).Records.map(
      ({
        attributes: { SequenceNumber, MessageGroupId, MessageDeduplicationId, ...attributes },
        ...record
      }) => ({
        ...record,
        attributes,
      }),
    ),
  };
}
