import { PolicyStatement } from 'aws-cdk-lib/aws-iam';
import { PUBLISH_NAMESPACE } from '../../lambdas/idempotency/keys.js';
import { deadLetterMarkId } from '../../lambdas/idempotency/record.js';

/**
 * Who may touch which items of the idempotency table. Its ids (DESIGN §3) are `namespace#key`; the
 * publisher's request records are `publish#<requestId>`, the consumer's DLQ marks
 * `oncely/dead-lettered#<messageId>` (a `/` no namespace has). `dynamodb:LeadingKeys` is the item's
 * partition key, present on every item action granted here, so the conditions below never pass a
 * request vacuously.
 */
const PUBLISHER_RECORDS = `${PUBLISH_NAMESPACE}#*`;
const DEAD_LETTER_MARKS = deadLetterMarkId('*');

/**
 * What the idempotency core sends: records are created with PutItem or taken with UpdateItem (the
 * acquire, DESIGN §3), released with DeleteItem,
 * committed with business writes in TransactWriteItems (authorised per item as a Put), and read
 * (GetItem) only to recover the at-most-once chain: the record before an expired unstarted lease
 * says whether that lease started (DESIGN §4.1). The consumer's DLQ marks are Puts (the claim, conditional, and `sent`) and a Delete (a claim given back).
 */
const IDEMPOTENCY_ACTIONS = [
  'dynamodb:GetItem',
  'dynamodb:PutItem',
  'dynamodb:UpdateItem',
  'dynamodb:DeleteItem',
];

export type RecordGrantee = 'publisher' | 'consumer' | 'core' | 'monitor';

const RECORD_GRANTS: Record<RecordGrantee, { actions: string[]; conditions: Record<string, unknown> }> = {
  // Request records are at-least-once leases, never taken ahead, so the publisher reads none: it
  // creates them with PutItem (or takes one again with UpdateItem), completes them with UpdateItem.
  publisher: {
    actions: ['dynamodb:PutItem', 'dynamodb:UpdateItem', 'dynamodb:DeleteItem'],
    conditions: { 'ForAllValues:StringLike': { 'dynamodb:LeadingKeys': [PUBLISHER_RECORDS] } },
  },
  // Its operations' records and its DLQ marks: anything but a publish request, which it could
  // otherwise complete or delete (a repeat would then send its messages again).
  consumer: {
    actions: IDEMPOTENCY_ACTIONS,
    conditions: { 'ForAllValues:StringNotLike': { 'dynamodb:LeadingKeys': [PUBLISHER_RECORDS] } },
  },
  // Another function using the core: its operations' records only, neither the publisher's nor the
  // consumer's DLQ marks (a mark it wrote would make the consumer skip that message's DLQ send).
  core: {
    actions: IDEMPOTENCY_ACTIONS,
    conditions: {
      'ForAllValues:StringNotLike': { 'dynamodb:LeadingKeys': [PUBLISHER_RECORDS, DEAD_LETTER_MARKS] },
    },
  },
  // The unresolved-records monitor removes the expiry of records an older version parked with one
  // (DESIGN §3): an UpdateItem on operation records, the only ones ever unresolved.
  monitor: {
    actions: ['dynamodb:UpdateItem'],
    conditions: {
      'ForAllValues:StringNotLike': { 'dynamodb:LeadingKeys': [PUBLISHER_RECORDS, DEAD_LETTER_MARKS] },
    },
  },
};

/** The statement giving `grantee` its item actions on the idempotency table, on its records only. */
export function recordStatement(grantee: RecordGrantee, tableArn: string): PolicyStatement {
  const { actions, conditions } = RECORD_GRANTS[grantee];
  return new PolicyStatement({ actions, resources: [tableArn], conditions });
}
