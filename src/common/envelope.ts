import { z } from 'zod';
import { NonRetryableError } from '../idempotency/errors.js';
import { deriveMessageKey, isValidKey } from '../idempotency/keys.js';
import { isNestedDeeperThan, MAX_PAYLOAD_DEPTH, PAYLOAD_TOO_DEEP } from './json-depth.js';

/** Message group ids and keys share SQS's rule: 1–128 printable ASCII characters, no spaces. */
const sqsId = (what: string) =>
  z.string().refine(isValidKey, `${what} must be 1–128 printable ASCII characters without spaces`);

/**
 * The SQS body of every Oncely message (DESIGN §2). The consumer takes the key from here, not from
 * the MessageDeduplicationId attribute, which SQS replaces when it moves a message to a FIFO DLQ.
 */
export const messageEnvelopeSchema = z.object({
  type: z.string().min(1, 'type must not be empty').max(128, 'type must be at most 128 characters'),
  key: sqsId('key'),
  groupId: sqsId('groupId'),
  payload: z.unknown(),
  publishedAt: z.iso.datetime({ message: 'publishedAt must be an ISO-8601 timestamp' }),
});

export type MessageEnvelope = z.infer<typeof messageEnvelopeSchema>;

/** A message as a producer hands it over; the key is derived when it is missing. */
export interface OutgoingMessage {
  type: string;
  groupId: string;
  key?: string;
  payload: unknown;
}

export function createEnvelope(message: OutgoingMessage, now = new Date()): MessageEnvelope {
  return {
    type: message.type,
    key: message.key ?? deriveMessageKey(message),
    groupId: message.groupId,
    payload: message.payload,
    publishedAt: now.toISOString(),
  };
}

/** The body is not an Oncely envelope: no retry can fix it, so it goes to the DLQ at once. */
export class InvalidEnvelopeError extends NonRetryableError {
  static override readonly errorName: string = 'InvalidEnvelopeError';
}

/**
 * What a consumer accepts: an envelope whose `key` may be missing, as in bodies written by a producer
 * other than Oncely's publisher. The consumer then keys the message by its MessageDeduplicationId.
 */
export const receivedEnvelopeSchema = messageEnvelopeSchema.extend({
  key: messageEnvelopeSchema.shape.key.optional(),
});

export type ReceivedEnvelope = z.infer<typeof receivedEnvelopeSchema>;

export function parseEnvelope(body: string): MessageEnvelope {
  return parseBody(body, messageEnvelopeSchema);
}

export function parseReceivedEnvelope(body: string): ReceivedEnvelope {
  return parseBody(body, receivedEnvelopeSchema);
}

/** Every problem a schema found, as "path: message", for errors a person can act on. */
export function describeIssues(error: z.ZodError): string {
  return error.issues.map((issue) => `${issue.path.join('.') || 'body'}: ${issue.message}`).join('; ');
}

function parseBody<T>(body: string, schema: z.ZodType<T>): T {
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
  const parsed = schema.safeParse(json);
  if (!parsed.success) {
    throw new InvalidEnvelopeError(
      `the message body is not a valid Oncely envelope: ${describeIssues(parsed.error)}`,
    );
  }
  return parsed.data;
}
