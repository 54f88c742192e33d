import type { SQSRecord } from 'aws-lambda';
import { sanitizedTraceContext, type TraceContext } from '../common/trace-context.js';
import { NO_SPAN, type OncelySpan, queueNameOf, type Tracing } from '../common/tracing.js';
import type { ReceivedRecord } from './message.js';

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

/**
 * Starts a record's span (DESIGN §6), as OpenTelemetry's messaging conventions name a message's
 * processing: `process <queue>`, of kind consumer, a child of the invocation's active context and
 * linked to its producer's. Its outcome is set when it ends (`RecordTelemetry.endSpan`).
 */
export function startRecordSpan(tracing: Tracing | undefined, received: ReceivedRecord): OncelySpan {
  if (!tracing?.enabled()) return NO_SPAN;
  const { record, groupId, message } = received;
  const queueName = record.eventSourceARN ? queueNameOf(record.eventSourceARN) : undefined;
  return tracing.start(queueName ? `process ${queueName}` : 'process', {
    kind: 'consumer',
    attributes: {
      'messaging.system': 'aws_sqs',
      'messaging.operation.type': 'process',
      'messaging.operation.name': 'process',
      'messaging.destination.name': queueName,
      'messaging.message.id': record.messageId,
      'oncely.message.key': message?.key ?? record.attributes.MessageDeduplicationId,
      'oncely.message.group': groupId || undefined,
      'oncely.message.type': message?.type,
      'oncely.attempt': Number(record.attributes.ApproximateReceiveCount) || undefined,
    },
    links: [recordTraceContext(record)],
  });
}
