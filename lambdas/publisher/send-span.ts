import { loadTracing, queueNameOf } from '../common/tracing.js';
import type { SendBatch } from './ordered-sender.js';

/** Who sends a batch of messages to the queue: the `oncely.sender` of its span. */
export type MessageSender = 'publisher' | 'relay' | 'sweeper';

/**
 * `sendBatch` with a span per call (DESIGN §6), as OpenTelemetry's messaging conventions name a
 * send: `send <queue>`, of kind producer, a child of the active context and linked to each
 * message's producer. The call runs inside it, so an instrumented AWS SDK's span nests under it.
 * Without `@opentelemetry/api`, or without an SDK registered, `sendBatch` runs as it is.
 */
export function tracedSendBatch(sendBatch: SendBatch, queueUrl: string, sender: MessageSender): SendBatch {
  const queueName = queueNameOf(queueUrl);
  return async (batch, signal) => {
    const tracing = await loadTracing();
    if (!tracing?.enabled()) return sendBatch(batch, signal);
    const groups = new Set(batch.map((message) => message.groupId));
    const span = tracing.start(`send ${queueName}`, {
      kind: 'producer',
      attributes: {
        'messaging.system': 'aws_sqs',
        'messaging.operation.type': 'send',
        'messaging.operation.name': 'SendMessageBatch',
        'messaging.destination.name': queueName,
        'messaging.batch.message_count': batch.length,
        'oncely.sender': sender,
        'oncely.message.keys': batch.map((message) => message.key),
        'oncely.message.group': groups.size === 1 ? [...groups][0] || undefined : undefined,
      },
      links: batch.map((message) => message.trace),
    });
    try {
      const outcomes = await span.within(() => sendBatch(batch, signal));
      const refused = outcomes.find((outcome) => !outcome.sent);
      span.setAttributes({ 'oncely.sent_count': outcomes.filter((outcome) => outcome.sent).length });
      if (refused && !refused.sent) span.fail(refused.reason);
      return outcomes;
    } catch (error) {
      span.fail(error);
      throw error;
    } finally {
      span.end();
    }
  };
}
