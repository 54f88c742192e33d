import { createEnvelope, ENVELOPE_RULES, isObject, type StringRule, sqsIdRule } from '../common/envelope.js';
import { isNestedDeeperThan, MAX_PAYLOAD_DEPTH, PAYLOAD_TOO_DEEP } from '../common/json-depth.js';
import { type TraceContext, traceAttributeBytes, traceContextProblems } from '../common/trace-context.js';
import { MAX_MESSAGES_PER_REQUEST, type PublishMessage, type PublishRequest } from './contract.js';
import { PublishValidationError, type ValidationProblem } from './errors.js';

/** A valid message, ready for SQS: its key (given or derived) and its envelope as the body. */
export interface PreparedMessage {
  /** Position in the request: results are reported in this order. */
  index: number;
  key: string;
  groupId: string;
  body: string;
  /** The producer's trace context, sent as the message's attributes; left out where the body leaves no room. */
  trace?: TraceContext;
  /** What SQS limits: the body's UTF-8 size, plus the trace context's attributes. */
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

const REQUEST_FIELDS = ['requestId', 'callId', 'traceContext', 'messages'];
const MESSAGE_FIELDS = ['type', 'groupId', 'key', 'payload'];
const REQUEST_ID_RULE = sqsIdRule('requestId');
const CALL_ID_RULE = sqsIdRule('callId');

/** Characters JSON.stringify leaves as they are but SQS refuses in a message body. */
const CHARACTERS_SQS_REFUSES = /[\uFFFE\uFFFF]/;

/**
 * Checks the whole request before anything is sent and prepares every message's SQS body. Throws
 * one PublishValidationError listing every problem, each with the message's index and the reason.
 */
export function validatePublishRequest(input: unknown, limits: ValidationLimits, now: Date): PublishCommand {
  const problems = requestProblems(input);
  const valid = problems.length === 0;
  // A copy when valid, holes read as undefined: each is a message that is missing.
  const rawMessages = valid
    ? Array.from((input as { messages: unknown[] }).messages)
    : messagesToCheckAnyway(input);

  const trace = valid ? (input as PublishRequest).traceContext : undefined;
  const traceBytes = traceAttributeBytes(trace);
  const messages: PublishMessage[] = [];
  const prepared: PreparedMessage[] = [];
  const firstIndexOfKey = new Map<string, number>();
  rawMessages.forEach((raw, index) => {
    const problemsOfMessage = messageProblems(raw, index);
    if (problemsOfMessage.length > 0) {
      problems.push(...problemsOfMessage);
      return;
    }
    const message = knownFields(raw as Record<string, unknown>, MESSAGE_FIELDS) as unknown as PublishMessage;
    const envelope = createEnvelope(message, now);
    const body = JSON.stringify(envelope);
    const bytes = Buffer.byteLength(body);
    const problem =
      bodyProblem(body, bytes, limits) ?? duplicateKeyProblem(message, envelope.key, firstIndexOfKey);
    if (problem) problems.push({ index, path: `messages[${index}]`, message: problem });
    firstIndexOfKey.set(envelope.key, firstIndexOfKey.get(envelope.key) ?? index);
    messages.push(message);
    // Tracing never makes a message fail: one whose body leaves no room for the context goes without.
    const traced = trace !== undefined && bytes + traceBytes <= limits.maxMessageBytes;
    prepared.push({
      index,
      key: envelope.key,
      groupId: message.groupId,
      body,
      ...(traced ? { trace, bytes: bytes + traceBytes } : { bytes }),
    });
  });

  if (!valid || problems.length > 0) throw new PublishValidationError(problems);
  const { requestId, callId, traceContext } = input as PublishRequest;
  return {
    requestId,
    ...(callId === undefined ? {} : { callId }),
    ...(traceContext === undefined ? {} : { traceContext }),
    messages,
    prepared,
  };
}

/** The request's own problems, field by field, then its unknown fields. */
function requestProblems(input: unknown): ValidationProblem[] {
  if (!isObject(input)) return [{ path: 'request', message: wrongType('the request', 'object', input) }];
  const problems: ValidationProblem[] = [];
  const requestId = stringProblem(input, 'requestId', REQUEST_ID_RULE, true);
  if (requestId) problems.push({ path: 'requestId', message: requestId });
  const callId = stringProblem(input, 'callId', CALL_ID_RULE, true);
  if (callId) problems.push({ path: 'callId', message: callId });
  for (const [path, message] of traceContextProblems(input.traceContext)) problems.push({ path, message });
  const { messages } = input;
  const messagesProblem = !Array.isArray(messages)
    ? wrongType('messages', 'array', messages)
    : messages.length < 1
      ? 'a request needs at least one message'
      : messages.length > MAX_MESSAGES_PER_REQUEST
        ? `at most ${MAX_MESSAGES_PER_REQUEST} messages per request: split them into several requests`
        : undefined;
  if (messagesProblem) problems.push({ path: 'messages', message: messagesProblem });
  const unknown = unknownFieldsProblem('the request', input, REQUEST_FIELDS);
  if (unknown) problems.push({ path: 'request', message: unknown });
  return problems;
}

/** One message's problems, field by field, then its unknown fields: the envelope's rules, so the consumer accepts it. */
function messageProblems(raw: unknown, index: number): ValidationProblem[] {
  const path = `messages[${index}]`;
  if (!isObject(raw)) return [{ index, path, message: wrongType('a message', 'object', raw) }];
  const problems: ValidationProblem[] = [];
  const add = (field: string, message: string | undefined) => {
    if (message) problems.push({ index, path: `${path}.${field}`, message });
  };
  add('type', stringProblem(raw, 'type', ENVELOPE_RULES.type));
  add('groupId', stringProblem(raw, 'groupId', ENVELOPE_RULES.groupId));
  add('key', stringProblem(raw, 'key', ENVELOPE_RULES.key, true));
  // JSON has no undefined: a payload set to undefined would vanish from the body. The depth is
  // checked here, before the derived key's canonical JSON walks the payload recursively.
  add(
    'payload',
    raw.payload === undefined
      ? 'payload is required'
      : isNestedDeeperThan(raw.payload, MAX_PAYLOAD_DEPTH)
        ? PAYLOAD_TOO_DEEP
        : undefined,
  );
  const unknown = unknownFieldsProblem('a message', raw, MESSAGE_FIELDS);
  if (unknown) problems.push({ index, path, message: unknown });
  return problems;
}

function stringProblem(
  object: Record<string, unknown>,
  field: string,
  rule: StringRule,
  optional = false,
): string | undefined {
  const value = object[field];
  if (optional && value === undefined) return undefined;
  return typeof value === 'string' ? rule(value) : wrongType(field, 'string', value);
}

function wrongType(subject: string, expected: string, value: unknown): string {
  if (value === undefined) return `${subject} is required`;
  return `${subject} must be ${/^[aeiou]/.test(expected) ? 'an' : 'a'} ${expected}`;
}

function unknownFieldsProblem(
  subject: string,
  object: Record<string, unknown>,
  fields: readonly string[],
): string | undefined {
  const unknown: string[] = [];
  for (const key in object) if (!fields.includes(key)) unknown.push(key);
  if (unknown.length === 0) return undefined;
  const listed = unknown.map((key) => JSON.stringify(key)).join(', ');
  return `${subject} has unknown field${unknown.length > 1 ? 's' : ''} ${listed} (its fields: ${fields.join(', ')})`;
}

/** A copy with only `fields`, in their order; a field absent from `object` stays absent. */
function knownFields(object: Record<string, unknown>, fields: readonly string[]): Record<string, unknown> {
  const copy: Record<string, unknown> = {};
  for (const field of fields) if (field in object) copy[field] = object[field];
  return copy;
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
  return `${why}: it would be dropped as a duplicate (by SQS on a FIFO queue, by the consumer on any). Give each message its own key`;
}
