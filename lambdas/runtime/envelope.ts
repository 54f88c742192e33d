import { z } from 'zod';
import { NonRetryableError } from './idempotency/errors';
import { deriveMessageKey, isValidKey } from './idempotency/keys';

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
export class InvalidEnvelopeError extends NonRetryableError {}

export function parseEnvelope(body: string): MessageEnvelope {
  let json: unknown;
  try {
    json = JSON.parse(body);
  } catch {
    throw new InvalidEnvelopeError('the message body is not JSON, so it is not an Oncely envelope');
  }
  const parsed = messageEnvelopeSchema.safeParse(json);
  if (!parsed.success) {
    const problems = parsed.error.issues.map(
      (issue) => `${issue.path.join('.') || 'body'}: ${issue.message}`,
    );
    throw new InvalidEnvelopeError(`the message body is not a valid Oncely envelope: ${problems.join('; ')}`);
  }
  return parsed.data;
}
