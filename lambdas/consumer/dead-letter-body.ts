import type { SQSRecord } from 'aws-lambda';
import { isKeylessEnvelope } from '../common/envelope.js';

/**
 * The body of a record's DLQ copy (DESIGN §2, §5): its own, with the key written in when it is an
 * envelope without one. Such an envelope is keyed by its MessageDeduplicationId, which the DLQ copy
 * does not keep (its own is the message id's hash) and a redrive replaces: written into the body,
 * the key comes back with the message, and a redrive moves no envelope without one. Written as
 * text, after the object's opening brace, so that nothing else changes, to the byte (JSON.parse
 * and JSON.stringify would round a large number in the payload).
 */
export function deadLetterBody(record: SQSRecord): string {
  const key = record.attributes.MessageDeduplicationId;
  if (key === undefined || !isKeylessEnvelope(record.body)) return record.body;
  const brace = record.body.indexOf('{');
  return `${record.body.slice(0, brace + 1)}"key":${JSON.stringify(key)},${record.body.slice(brace + 1)}`;
}
