import { isNestedDeeperThan, MAX_PAYLOAD_DEPTH, PAYLOAD_TOO_DEEP } from './json-depth.js';
import { deriveMessageKey, isValidKey } from './message-key.js';
import { NonRetryableError } from './oncely-error.js';
import { describeIssues, type StandardSchemaV1 } from './standard-schema.js';

/**
 * The SQS body of every Oncely message (DESIGN §2). The consumer takes the key from here, not from
 * the MessageDeduplicationId attribute, which SQS replaces when it moves a message to a FIFO DLQ.
 */
export interface MessageEnvelope {
  /** What happened, e.g. "OrderPlaced": selects the consumer's operation. */
  type: string;
  /** The idempotency key. */
  key: string;
  /** The SQS message group: the unit of ordering. */
  groupId: string;
  /** Any JSON value. */
  payload: unknown;
  /** ISO-8601, UTC (`Z`): when the message was first published. */
  publishedAt: string;
}

/**
 * What a consumer accepts: an envelope whose `key` may be missing, as in bodies written by a producer
 * other than Oncely's publisher. The consumer then keys the message by its MessageDeduplicationId.
 */
export type ReceivedEnvelope = Omit<MessageEnvelope, 'key'> & { key?: string | undefined };

/** A message as a producer hands it over; the key is derived when it is missing. */
export interface OutgoingMessage {
  /** What happened, e.g. "OrderPlaced". */
  type: string;
  /** The SQS message group: the unit of ordering. */
  groupId: string;
  /**
   * The idempotency key.
   * @default derived from `type`, `groupId` and `payload` (DESIGN §2)
   */
  key?: string;
  /** Any JSON value. */
  payload: unknown;
}

/**
 * The body of an Oncely message, for a producer that sends to the queue itself rather than
 * through `publish`: send it as the body, with `groupId` as MessageGroupId and `key` as
 * MessageDeduplicationId. Stamps `publishedAt` with `now`.
 *
 * @example
 * ```ts
 * const envelope = createEnvelope({ type: 'OrderPlaced', groupId: 'customer-42', key: 'order-7', payload: order });
 * await sqs.send(new SendMessageCommand({ QueueUrl, MessageBody: JSON.stringify(envelope), MessageGroupId: envelope.groupId, MessageDeduplicationId: envelope.key }));
 * ```
 */
export function createEnvelope(message: OutgoingMessage, now = new Date()): MessageEnvelope {
  return {
    type: message.type,
    key: message.key ?? deriveMessageKey(message),
    groupId: message.groupId,
    payload: message.payload,
    publishedAt: now.toISOString(),
  };
}

/** The problem with a string field's value, if any; its type was checked before. */
export type StringRule = (value: string) => string | undefined;

/** Message group ids and keys share SQS's rule: 1–128 printable ASCII characters, no spaces. */
export const sqsIdRule =
  (what: string): StringRule =>
  (value) =>
    isValidKey(value) ? undefined : `${what} must be 1–128 printable ASCII characters without spaces`;

/** The envelope's rules for its strings, which the publisher applies to what it is given too. */
export const ENVELOPE_RULES = {
  type(value: string) {
    return value.length < 1
      ? 'type must not be empty'
      : value.length > 128
        ? 'type must be at most 128 characters'
        : undefined;
  },
  key: sqsIdRule('key'),
  groupId: sqsIdRule('groupId'),
} satisfies Record<string, StringRule>;

/** RFC 3339 in UTC, seconds required, any fraction: what `Date.prototype.toISOString` writes, and more. */
const ISO_DATETIME =
  /^(?:(?:\d\d[2468][048]|\d\d[13579][26]|\d\d0[48]|[02468][048]00|[13579][26]00)-02-29|\d{4}-(?:(?:0[13578]|1[02])-(?:0[1-9]|[12]\d|3[01])|(?:0[469]|11)-(?:0[1-9]|[12]\d|30)|(?:02)-(?:0[1-9]|1\d|2[0-8])))T(?:(?:[01]\d|2[0-3]):[0-5]\d:[0-5]\d(?:\.\d+)?(?:Z))$/;
const NOT_A_TIMESTAMP = 'publishedAt must be an ISO-8601 timestamp';

/** The body is not an Oncely envelope: no retry can fix it, so it goes to the DLQ at once. */
export class InvalidEnvelopeError extends NonRetryableError {
  /** {@inheritDoc OncelyError.errorName} */
  static override readonly errorName: string = 'InvalidEnvelopeError';
}

export function parseEnvelope(body: string): MessageEnvelope {
  return parseBody(body, false) as MessageEnvelope;
}

export function parseReceivedEnvelope(body: string): ReceivedEnvelope {
  return parseBody(body, true);
}

/**
 * Whether the body is an Oncely envelope without a `key`: keyed by its MessageDeduplicationId, which
 * SQS replaces when it moves the message to a FIFO DLQ and a redrive's send would replace (DESIGN §2).
 */
export function isKeylessEnvelope(body: string): boolean {
  try {
    return parseReceivedEnvelope(body).key === undefined;
  } catch (error) {
    if (error instanceof InvalidEnvelopeError) return false;
    throw error;
  }
}

function parseBody(body: string, keyOptional: boolean): ReceivedEnvelope {
  let json: unknown;
  try {
    json = JSON.parse(body);
  } catch {
    throw new InvalidEnvelopeError('the message body is not JSON, so it is not an Oncely envelope');
  }
  // Before anything walks the payload recursively (the key, the hash), which a deep one would overflow.
  if (isNestedDeeperThan((json as { payload?: unknown } | null)?.payload, MAX_PAYLOAD_DEPTH)) {
    throw new InvalidEnvelopeError(`the message body is not a valid Oncely envelope: ${PAYLOAD_TOO_DEEP}`);
  }
  const issues = envelopeIssues(json, keyOptional);
  if (issues.length > 0) {
    throw new InvalidEnvelopeError(
      `the message body is not a valid Oncely envelope: ${describeIssues(issues)}`,
    );
  }
  // Only the envelope's fields, in its order: anything else in the body is dropped.
  const { type, key, groupId, payload, publishedAt } = json as unknown as MessageEnvelope;
  return {
    type,
    ...(keyOptional && !('key' in (json as object)) ? {} : { key }),
    groupId,
    payload,
    publishedAt,
  };
}

/** Every problem of the body, field by field in the envelope's order, worded as zod's defaults were. */
function envelopeIssues(json: unknown, keyOptional: boolean): StandardSchemaV1.Issue[] {
  if (!isObject(json)) return [{ path: [], message: wrongType('object', json) }];
  const issues: StandardSchemaV1.Issue[] = [];
  const check = (field: keyof typeof ENVELOPE_RULES, optional = false) => {
    const value = json[field];
    if (optional && value === undefined) return;
    const message = typeof value === 'string' ? ENVELOPE_RULES[field](value) : wrongType('string', value);
    if (message) issues.push({ path: [field], message });
  };
  check('type');
  check('key', keyOptional);
  check('groupId');
  if (!('payload' in json)) issues.push({ path: ['payload'], message: wrongType('nonoptional', undefined) });
  const { publishedAt } = json;
  if (typeof publishedAt !== 'string' || !ISO_DATETIME.test(publishedAt)) {
    issues.push({ path: ['publishedAt'], message: NOT_A_TIMESTAMP });
  }
  return issues;
}

/** An object as a JSON document has them: neither null nor an array. */
export function isObject(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

function wrongType(expected: string, value: unknown): string {
  const received = value === null ? 'null' : Array.isArray(value) ? 'array' : typeof value;
  return `Invalid input: expected ${expected}, received ${received}`;
}
