import { type core, z } from 'zod';
import { createEnvelope, messageEnvelopeSchema } from '../common/envelope.js';
import { isNestedDeeperThan, MAX_PAYLOAD_DEPTH, PAYLOAD_TOO_DEEP } from '../common/json-depth.js';
import { isValidKey } from '../idempotency/keys.js';
import { MAX_MESSAGES_PER_REQUEST, type PublishMessage, type PublishRequest } from './contract.js';
import { PublishValidationError, type ValidationProblem } from './errors.js';

/** A valid message, ready for SQS: its key (given or derived) and its envelope as the body. */
export interface PreparedMessage {
  /** Position in the request: results are reported in this order. */
  index: number;
  key: string;
  groupId: string;
  body: string;
  /** UTF-8 size of the body, which is what SQS limits. */
  bytes: number;
}

/** A request that passed validation, with every message prepared. */
export interface PublishCommand extends PublishRequest {
  prepared: PreparedMessage[];
}

export interface ValidationLimits {
  /** The queue's maximum message size; every body must fit. */
  maxMessageBytes: number;
}

const requestSchema = z.strictObject({
  requestId: z
    .string()
    .refine(isValidKey, 'requestId must be 1–128 printable ASCII characters without spaces')
    .optional(),
  messages: z
    .array(z.unknown())
    .min(1, 'a request needs at least one message')
    .max(
      MAX_MESSAGES_PER_REQUEST,
      `at most ${MAX_MESSAGES_PER_REQUEST} messages per request: split them into several requests`,
    ),
});

// The envelope's own rules for type, groupId and key, so what is accepted here is what the consumer accepts.
const messageSchema = messageEnvelopeSchema
  .pick({ type: true, groupId: true })
  .extend({
    key: messageEnvelopeSchema.shape.key.optional(),
    // JSON has no undefined: a payload set to undefined would vanish from the body.
    payload: z
      .unknown()
      .refine((payload) => payload !== undefined, 'payload is required')
      // Checked here, before the derived key's canonical JSON walks it recursively.
      .refine((payload) => !isNestedDeeperThan(payload, MAX_PAYLOAD_DEPTH), PAYLOAD_TOO_DEEP),
  })
  .strict();

/** Characters JSON.stringify leaves as they are but SQS refuses in a message body. */
const CHARACTERS_SQS_REFUSES = /[\uFFFE\uFFFF]/;

/**
 * Checks the whole request before anything is sent and prepares every message's SQS body. Throws
 * one PublishValidationError listing every problem, each with the message's index and the reason.
 */
export function validatePublishRequest(input: unknown, limits: ValidationLimits, now: Date): PublishCommand {
  const request = requestSchema.safeParse(input, { error: describeIssue('the request', requestSchema) });
  const problems: ValidationProblem[] = request.success ? [] : request.error.issues.map(requestProblem);
  const rawMessages = request.success ? request.data.messages : messagesToCheckAnyway(input);

  const messages: PublishMessage[] = [];
  const prepared: PreparedMessage[] = [];
  const firstIndexOfKey = new Map<string, number>();
  rawMessages.forEach((raw, index) => {
    const parsed = messageSchema.safeParse(raw, { error: describeIssue('a message', messageSchema) });
    if (!parsed.success) {
      problems.push(...parsed.error.issues.map((issue) => messageProblem(index, issue)));
      return;
    }
    const message = parsed.data;
    const envelope = createEnvelope(message, now);
    const body = JSON.stringify(envelope);
    const bytes = Buffer.byteLength(body);
    const problem =
      bodyProblem(body, bytes, limits) ?? duplicateKeyProblem(message, envelope.key, firstIndexOfKey);
    if (problem) problems.push({ index, path: `messages[${index}]`, message: problem });
    firstIndexOfKey.set(envelope.key, firstIndexOfKey.get(envelope.key) ?? index);
    messages.push(message);
    prepared.push({ index, key: envelope.key, groupId: message.groupId, body, bytes });
  });

  if (!request.success || problems.length > 0) throw new PublishValidationError(problems);
  return { requestId: request.data.requestId, messages, prepared };
}

/** Lists each message's own problems too when only the request's envelope is wrong (e.g. too many messages). */
function messagesToCheckAnyway(input: unknown): unknown[] {
  const messages = (input as { messages?: unknown } | null)?.messages;
  return Array.isArray(messages) ? messages : [];
}

function bodyProblem(body: string, bytes: number, limits: ValidationLimits): string | undefined {
  if (bytes > limits.maxMessageBytes) {
    return (
      `its SQS body is ${bytes} bytes, over the queue's limit of ${limits.maxMessageBytes} bytes: ` +
      'make the payload smaller, or store it elsewhere and send a reference'
    );
  }
  if (CHARACTERS_SQS_REFUSES.test(body)) {
    return 'its type or payload contains U+FFFE or U+FFFF, characters SQS refuses in a message body';
  }
  return undefined;
}

function duplicateKeyProblem(
  message: PublishMessage,
  key: string,
  firstIndexOfKey: Map<string, number>,
): string | undefined {
  const first = firstIndexOfKey.get(key);
  if (first === undefined) return undefined;
  const why =
    message.key === undefined
      ? `it has the same type, groupId and payload as messages[${first}], so the same derived key`
      : `its key "${key}" is also the key of messages[${first}]`;
  return `${why}: SQS would drop it as a duplicate. Give each message its own key`;
}

function requestProblem(issue: core.$ZodIssue): ValidationProblem {
  return { path: issue.path.length ? formatPath(issue.path) : 'request', message: issue.message };
}

function messageProblem(index: number, issue: core.$ZodIssue): ValidationProblem {
  return { index, path: formatPath(['messages', index, ...issue.path]), message: issue.message };
}

function formatPath(path: readonly PropertyKey[]): string {
  return path
    .map((part, i) => (typeof part === 'number' ? `[${part}]` : `${i ? '.' : ''}${String(part)}`))
    .join('');
}

/** Clearer wording than zod's defaults for the issues whose messages the schemas do not set. */
function describeIssue(subject: string, schema: { shape: object }) {
  const fields = Object.keys(schema.shape).join(', ');
  return (issue: core.$ZodRawIssue): string | undefined => {
    const field = issue.path?.length ? String(issue.path.at(-1)) : subject;
    switch (issue.code) {
      case 'invalid_type':
        if (issue.input === undefined) return `${field} is required`;
        return `${field} must be ${/^[aeiou]/.test(issue.expected) ? 'an' : 'a'} ${issue.expected}`;
      case 'unrecognized_keys': {
        const unknown = issue.keys.map((key) => JSON.stringify(key)).join(', ');
        return `${subject} has unknown field${issue.keys.length > 1 ? 's' : ''} ${unknown} (its fields: ${fields})`;
      }
      default:
        return undefined;
    }
  };
}
