import type { SQSRecord } from 'aws-lambda';
import { InvalidEnvelopeError, parseReceivedEnvelope } from '../common/envelope.js';
import { MissingMessageGroupError } from './errors.js';

/** One SQS record as a consumer's business code sees it: the envelope, its key, and SQS's delivery facts. */
export interface ConsumerMessage<P = unknown> {
  type: string;
  /**
   * The envelope's `key`; the MessageDeduplicationId only for a body without one. Not the attribute
   * first: SQS replaces it when it moves a message to a FIFO DLQ, and a redrive must keep its key.
   */
  key: string;
  /** The SQS message group: the unit of ordering. */
  groupId: string;
  payload: P;
  publishedAt: string;
  messageId: string;
  /** 1 on the first delivery. */
  receiveCount: number;
  record: SQSRecord;
}

/** A record of the batch, read once: its message, or why its body is not one. */
export type ReceivedRecord = { record: SQSRecord; groupId: string } & (
  | { message: ConsumerMessage; error?: undefined }
  | { message?: undefined; error: InvalidEnvelopeError }
);

/** What every log line about a record carries. */
export interface RecordLogFields {
  messageId: string;
  groupId: string;
  messageKey: string | undefined;
  messageType?: string;
}

/** Reads a record's group and envelope. Throws only for a record that is not from a FIFO queue. */
export function receiveRecord(record: SQSRecord): ReceivedRecord {
  const groupId = record.attributes.MessageGroupId;
  if (!groupId) throw new MissingMessageGroupError(record.messageId);
  try {
    return { record, groupId, message: readMessage(record, groupId) };
  } catch (error) {
    if (!(error instanceof InvalidEnvelopeError)) throw error;
    return { record, groupId, error };
  }
}

export function logFieldsOf({ record, groupId, message }: ReceivedRecord): RecordLogFields {
  return message
    ? { messageId: record.messageId, groupId, messageKey: message.key, messageType: message.type }
    : { messageId: record.messageId, groupId, messageKey: record.attributes.MessageDeduplicationId };
}

function readMessage(record: SQSRecord, groupId: string): ConsumerMessage {
  const envelope = parseReceivedEnvelope(record.body);
  const key = envelope.key ?? record.attributes.MessageDeduplicationId;
  if (!key) {
    throw new InvalidEnvelopeError('the message has neither a key in its body nor a MessageDeduplicationId');
  }
  return {
    type: envelope.type,
    key,
    groupId,
    payload: envelope.payload,
    publishedAt: envelope.publishedAt,
    messageId: record.messageId,
    receiveCount: Number(record.attributes.ApproximateReceiveCount),
    record,
  };
}
