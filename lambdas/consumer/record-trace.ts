import type { SQSRecord } from 'aws-lambda';
import { sanitizedTraceContext, type TraceContext } from '../common/trace-context.js';

/**
 * The producer's trace context a record arrived with (DESIGN §6): its `traceparent` and
 * `tracestate` message attributes and its `AWSTraceHeader` system attribute. Nothing without them.
 */
export function recordTraceContext(record: SQSRecord): TraceContext | undefined {
  const attributes = record.messageAttributes ?? {};
  return sanitizedTraceContext({
    traceparent: attributes.traceparent?.stringValue,
    tracestate: attributes.tracestate?.stringValue,
    awsTraceHeader: record.attributes?.AWSTraceHeader,
  });
}
