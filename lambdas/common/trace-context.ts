import type { MessageAttributeValue, MessageSystemAttributeValue } from '@aws-sdk/client-sqs';
import type { KnownKeys } from './known-keys.js';
import { sqsMessageBytes } from './message-size.js';

/**
 * A producer's trace context, carried with each message it publishes (DESIGN §6): OpenTelemetry's
 * W3C `traceparent` and `tracestate`, as SQS message attributes of those names (OpenTelemetry's
 * messaging conventions), and X-Ray's trace header, as the `AWSTraceHeader` system attribute by
 * which Lambda's own tracing links a consumer's invocation to its producer.
 */
export interface TraceContext {
  /** W3C Trace Context's `traceparent`: `00-<trace id>-<parent id>-<flags>`. */
  traceparent?: string;
  /** W3C Trace Context's `tracestate`, sent only with a `traceparent`. */
  tracestate?: string;
  /** X-Ray's trace header, `Root=…;Parent=…;Sampled=…`. */
  awsTraceHeader?: string;
}

/** The fields of a TraceContext, in the order a request lists them. */
export const TRACE_CONTEXT_FIELDS = ['traceparent', 'tracestate', 'awsTraceHeader'] as const;

export const TRACE_CONTEXT_KEYS = {
  traceparent: true,
  tracestate: true,
  awsTraceHeader: true,
} satisfies KnownKeys<TraceContext>;

/** W3C Trace Context, version 00: lower-case hex, an all-zero trace or parent id is invalid. */
const TRACEPARENT = /^00-(?!0{32})[0-9a-f]{32}-(?!0{16})[0-9a-f]{16}-[0-9a-f]{2}$/;
/** W3C's limit for `tracestate` (32 members); printable ASCII, as its grammar allows. */
const MAX_TRACESTATE_LENGTH = 512;
/** X-Ray documents trace headers of up to 7 KiB with their optional fields; 2,048 keeps room for those SQS sees. */
const MAX_AWS_TRACE_HEADER_LENGTH = 2_048;
const PRINTABLE_ASCII = /^[\x20-\x7e]*$/;
const X_RAY_ROOT = /(^|;)\s*Root=1-[0-9a-f]{8}-[0-9a-f]{24}(;|$)/;

/** Methods, not arrow functions: a minifying bundler that keeps names wraps each of those. */
const RULES: Record<(typeof TRACE_CONTEXT_FIELDS)[number], (value: string) => string | undefined> = {
  traceparent(value) {
    return TRACEPARENT.test(value) ? undefined : 'must be a W3C traceparent, 00-<32 hex>-<16 hex>-<2 hex>';
  },
  tracestate(value) {
    return value.length <= MAX_TRACESTATE_LENGTH && PRINTABLE_ASCII.test(value)
      ? undefined
      : `must be printable ASCII of at most ${MAX_TRACESTATE_LENGTH} characters`;
  },
  awsTraceHeader(value) {
    return value.length <= MAX_AWS_TRACE_HEADER_LENGTH &&
      PRINTABLE_ASCII.test(value) &&
      X_RAY_ROOT.test(value)
      ? undefined
      : `must be an X-Ray trace header with a Root=1-<8 hex>-<24 hex>, of at most ${MAX_AWS_TRACE_HEADER_LENGTH} characters`;
  },
};

/** Each problem of a request's `traceContext`, as `[field, reason]`; none for a valid one or none at all. */
export function traceContextProblems(value: unknown): [path: string, reason: string][] {
  if (value === undefined) return [];
  if (typeof value !== 'object' || value === null || Array.isArray(value)) {
    return [['traceContext', 'traceContext must be an object']];
  }
  const problems: [string, string][] = [];
  const fields = value as Record<string, unknown>;
  for (const key of Object.keys(fields)) {
    if (!(TRACE_CONTEXT_FIELDS as readonly string[]).includes(key)) {
      problems.push([
        'traceContext',
        `traceContext has unknown field ${JSON.stringify(key)} (its fields: ${TRACE_CONTEXT_FIELDS.join(', ')})`,
      ]);
    }
  }
  for (const field of TRACE_CONTEXT_FIELDS) {
    const fieldValue = fields[field];
    if (fieldValue === undefined) continue;
    const reason = typeof fieldValue === 'string' ? RULES[field](fieldValue) : `${field} must be a string`;
    if (reason) problems.push([`traceContext.${field}`, `${field} ${reason}`]);
  }
  if (fields.tracestate !== undefined && fields.traceparent === undefined) {
    problems.push(['traceContext.tracestate', 'tracestate is sent only with a traceparent']);
  }
  return problems;
}

/**
 * The valid part of a context a propagator produced, or nothing: a producer's tracing never makes a
 * publish fail, so what would not pass the publisher's validation is left out, not sent.
 */
export function sanitizedTraceContext(candidate: Partial<Record<string, unknown>>): TraceContext | undefined {
  const context: TraceContext = {};
  for (const field of TRACE_CONTEXT_FIELDS) {
    const value = candidate[field];
    if (typeof value === 'string' && RULES[field](value) === undefined) context[field] = value;
  }
  if (context.traceparent === undefined) delete context.tracestate;
  return Object.keys(context).length > 0 ? context : undefined;
}

/** The SQS attributes that carry a context: message attributes for W3C's fields, the system attribute for X-Ray's. */
export function sqsTraceAttributes(context: TraceContext | undefined): {
  MessageAttributes?: Record<string, MessageAttributeValue>;
  MessageSystemAttributes?: Record<'AWSTraceHeader', MessageSystemAttributeValue>;
} {
  if (!context) return {};
  const messageAttributes: Record<string, MessageAttributeValue> = {};
  if (context.traceparent) messageAttributes.traceparent = stringAttribute(context.traceparent);
  if (context.traceparent && context.tracestate)
    messageAttributes.tracestate = stringAttribute(context.tracestate);
  return {
    ...(Object.keys(messageAttributes).length > 0 ? { MessageAttributes: messageAttributes } : {}),
    ...awsTraceHeaderOf(context.awsTraceHeader),
  };
}

/**
 * What a context's attributes add to a message's size as SQS counts it: each message attribute's
 * name, data type and value. A system attribute (`AWSTraceHeader`) does not count.
 */
export function traceAttributeBytes(context: TraceContext | undefined): number {
  return sqsMessageBytes('', sqsTraceAttributes(context).MessageAttributes);
}

/** The system attribute that carries X-Ray's header on, for a message sent again (DLQ copy, redrive). */
export function awsTraceHeaderOf(header: string | undefined): {
  MessageSystemAttributes?: Record<'AWSTraceHeader', MessageSystemAttributeValue>;
} {
  return header ? { MessageSystemAttributes: { AWSTraceHeader: stringAttribute(header) } } : {};
}

/** An SQS message attribute of type String. */
export function stringAttribute(value: string) {
  return { DataType: 'String', StringValue: value };
}
