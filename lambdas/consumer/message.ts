import type { SQSRecord } from 'aws-lambda';
import { InvalidEnvelopeError, parseReceivedEnvelope } from '../common/envelope.js';
import { isRetryable } from '../idempotency/errors.js';
import { MissingMessageGroupError, UnparsableMessageError } from './errors.js';

/** What a message parser reads from an SQS record (DESIGN §2); the group is always the record's MessageGroupId. */
export interface ParsedMessage {
  /** Selects the operation (`FifoBatchOptions.operations`). */
  type: string;
  /**
   * The message's idempotency key. Take it from the body when the body has one: SQS replaces the
   * MessageDeduplicationId when it moves a message to a FIFO DLQ, and a redrive must keep its key.
   */
  key: string;
  /** The message's content, as the operation's `payload` schema (if any) then checks it. */
  payload: unknown;
  /** ISO-8601: when the message was first published, for the dedup horizon (DESIGN §2). */
  publishedAt: string;
}

/**
 * Reads a record's body. Whatever it throws makes the record non-retryable: it goes to the DLQ at
 * once, as a body that is not an Oncely envelope does.
 */
export type MessageParser = (record: SQSRecord) => ParsedMessage;

/** One SQS record as a consumer's business code sees it: the parsed message and SQS's delivery facts. */
export interface ConsumerMessage<P = unknown> {
  /** The message type: it selected the operation. */
  type: string;
  /**
   * The envelope's `key`; the MessageDeduplicationId only for a body without one. Not the attribute
   * first: SQS replaces it when it moves a message to a FIFO DLQ, and a redrive must keep its key.
   */
  key: string;
  /**
   * The SQS message group: on a FIFO queue the unit of ordering; on a fair queue the tenant key,
   * which orders nothing; `''` on a standard queue without one.
   */
  groupId: string;
  /** The payload, as the operation's `payload` schema returned it when there is one. */
  payload: P;
  /** ISO-8601: when the message was first published. */
  publishedAt: string;
  /** The SQS message id of this delivery. */
  messageId: string;
  /** 1 on the first delivery. */
  receiveCount: number;
  /** The SQS record as Lambda delivered it. */
  record: SQSRecord;
}

/**
 * The default parser: the body is an Oncely envelope (DESIGN §2), keyed by its `key`, or by the
 * MessageDeduplicationId when it has none. Throws `InvalidEnvelopeError`.
 */
export const parseEnvelopeRecord: MessageParser = (record) => {
  const envelope = parseReceivedEnvelope(record.body);
  const key = envelope.key ?? record.attributes.MessageDeduplicationId;
  if (!key) {
    throw new InvalidEnvelopeError('the message has neither a key in its body nor a MessageDeduplicationId');
  }
  return { type: envelope.type, key, payload: envelope.payload, publishedAt: envelope.publishedAt };
};

/** A record of the batch, read once: its message, or why its body is not one. */
export type ReceivedRecord = { record: SQSRecord; groupId: string } & (
  | { message: ConsumerMessage; error?: undefined }
  | { message?: undefined; error: Error }
);

/** What every log line about a record carries. */
export interface RecordLogFields {
  messageId: string;
  groupId: string;
  messageKey: string | undefined;
  messageType?: string;
  /** `'standard'` on the lines of a standard queue's consumer (DESIGN §5.1); absent on FIFO's. */
  queueType?: 'standard';
}

/**
 * Reads a record's group and message. From a FIFO queue (the default) a record must have a group:
 * throws for one without. From a standard queue the group is the fair queue's tenant key, or `''`.
 */
export function receiveRecord(
  record: SQSRecord,
  parse: MessageParser,
  queueType: 'fifo' | 'standard' = 'fifo',
): ReceivedRecord {
  const groupId = record.attributes.MessageGroupId ?? (queueType === 'standard' ? '' : undefined);
  if (groupId === undefined || (queueType === 'fifo' && !groupId)) {
    throw new MissingMessageGroupError(record.messageId);
  }
  let parsed: ParsedMessage;
  try {
    parsed = parse(record);
    checkParsed(parsed);
  } catch (error) {
    // A retryable error would block the group until SQS dead-letters it: a body does not change.
    return {
      record,
      groupId,
      error: isRetryable(error) ? new UnparsableMessageError(record, error) : (error as Error),
    };
  }
  const message: ConsumerMessage = {
    type: parsed.type,
    key: parsed.key,
    groupId,
    payload: parsed.payload,
    publishedAt: parsed.publishedAt,
    messageId: record.messageId,
    receiveCount: Number(record.attributes.ApproximateReceiveCount),
    record,
  };
  return { record, groupId, message };
}

export function logFieldsOf({ record, groupId, message }: ReceivedRecord): RecordLogFields {
  return message
    ? { messageId: record.messageId, groupId, messageKey: message.key, messageType: message.type }
    : { messageId: record.messageId, groupId, messageKey: record.attributes.MessageDeduplicationId };
}

/** A parser's field of the wrong type fails its record's parse, not some later step on a wrong value. */
function checkParsed(parsed: ParsedMessage): void {
  const wrong = (['type', 'key', 'publishedAt'] as const).filter(
    (field) => typeof (parsed as Partial<ParsedMessage> | undefined)?.[field] !== 'string',
  );
  if (wrong.length > 0) throw new Error(`the parser returned no string ${wrong.join(', ')}`);
}
