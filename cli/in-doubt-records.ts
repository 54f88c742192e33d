import { randomUUID } from 'node:crypto';
import {
  type AttributeValue,
  ConditionalCheckFailedException,
  type DynamoDBClient,
} from '@aws-sdk/client-dynamodb';
import { SendMessageCommand, type SQSClient } from '@aws-sdk/client-sqs';
import {
  DeleteCommand,
  DynamoDBDocumentClient,
  PutCommand,
  paginateScan,
  UpdateCommand,
} from '@aws-sdk/lib-dynamodb';
import { unmarshall } from '@aws-sdk/util-dynamodb';
import {
  type IdempotencyRecord,
  MAX_KEPT_MESSAGE_BYTES,
  type StoredError,
} from '../lambdas/runtime/idempotency';
import type { PipelineResources } from '../lib/stack-outputs';
import {
  MessageNotKeptError,
  RecordNotInDoubtError,
  ResendFailedError,
  UnknownRecordError,
} from './operations-errors';

/** An IN_DOUBT record, as an operator decides about it. */
export interface InDoubtRecord {
  /** `namespace#key`: what `oncely in-doubt resolve` takes. */
  id: string;
  reason?: StoredError;
  /** ISO time it became IN_DOUBT. */
  since?: string;
  attempts?: number;
  /** The group its kept message goes back to; absent when the record kept no message (no retry then). */
  groupId?: string;
}

export type Resolution =
  | { id: string; as: 'completed' }
  /** The record was deleted and its message sent again as `messageId`. */
  | { id: string; as: 'retry'; groupId: string; messageId: string };

/** What in-doubt operations need: the idempotency table, and the queue a retry goes to. */
export interface InDoubtTarget {
  dynamodb: DynamoDBClient;
  sqs: SQSClient;
  resources: Pick<PipelineResources, 'idempotencyTableName' | 'queueUrl'>;
  /** Epoch ms; a record past its `expiresAt` counts as gone, as it does for the consumer. */
  now?: () => number;
}

const IN_DOUBT = 'IN_DOUBT';
const STATUS_NAMES = { '#status': 'status' };
const STILL_IN_DOUBT = '#status = :inDoubt AND expiresAt > :nowSec';

/**
 * Every IN_DOUBT record of the idempotency table, oldest first. A Scan with a filter (it reads the
 * whole table, page by page); it leaves out the kept message bodies, which may be large.
 */
export async function listInDoubt(target: InDoubtTarget): Promise<InDoubtRecord[]> {
  const documents = DynamoDBDocumentClient.from(target.dynamodb);
  const now = (target.now ?? Date.now)();
  const records: InDoubtRecord[] = [];
  const pages = paginateScan(
    { client: documents },
    {
      TableName: target.resources.idempotencyTableName,
      ConsistentRead: true,
      FilterExpression: STILL_IN_DOUBT,
      ProjectionExpression: 'id, #error, updatedAt, attempts, #message.groupId',
      ExpressionAttributeNames: { ...STATUS_NAMES, '#error': 'error', '#message': 'message' },
      ExpressionAttributeValues: { ':inDoubt': IN_DOUBT, ':nowSec': Math.floor(now / 1000) },
    },
  );
  for await (const page of pages) {
    for (const item of (page.Items ?? []) as Partial<IdempotencyRecord>[]) {
      records.push({
        id: String(item.id),
        reason: item.error,
        since: item.updatedAt ? new Date(item.updatedAt).toISOString() : undefined,
        attempts: item.attempts,
        groupId: item.message?.groupId,
      });
    }
  }
  return records.sort((a, b) => (a.since ?? '').localeCompare(b.since ?? ''));
}

/**
 * `--as completed`: the effect happened. The record becomes COMPLETED, so the message never runs
 * again (a redriven copy counts as a duplicate). Conditional on the record still being IN_DOUBT.
 */
export async function resolveAsCompleted(target: InDoubtTarget, id: string): Promise<Resolution> {
  const now = (target.now ?? Date.now)();
  try {
    await DynamoDBDocumentClient.from(target.dynamodb).send(
      new UpdateCommand({
        TableName: target.resources.idempotencyTableName,
        Key: { id },
        UpdateExpression: 'SET #status = :completed, updatedAt = :nowMs REMOVE #error, #message',
        ConditionExpression: STILL_IN_DOUBT,
        ExpressionAttributeNames: { ...STATUS_NAMES, '#error': 'error', '#message': 'message' },
        ExpressionAttributeValues: {
          ':completed': 'COMPLETED',
          ':inDoubt': IN_DOUBT,
          ':nowMs': now,
          ':nowSec': Math.floor(now / 1000),
        },
        ReturnValuesOnConditionCheckFailure: 'ALL_OLD',
      }),
    );
  } catch (error) {
    throw notResolvable(error, id, now);
  }
  return { id, as: 'completed' };
}

/**
 * `--as retry`: the effect did not happen; run it again. Deletes the record (only while it is still
 * IN_DOUBT and holds its message), then sends the kept message to the queue again, in its group
 * and with a fresh deduplication id: the consumer runs it as a new message. The record goes first,
 * so that the consumer can never find the re-sent message still IN_DOUBT and drop it. If the send
 * fails, the record is put back as it was.
 */
export async function resolveAsRetry(target: InDoubtTarget, id: string): Promise<Resolution> {
  const documents = DynamoDBDocumentClient.from(target.dynamodb);
  const now = (target.now ?? Date.now)();
  let record: IdempotencyRecord;
  try {
    const { Attributes } = await documents.send(
      new DeleteCommand({
        TableName: target.resources.idempotencyTableName,
        Key: { id },
        ConditionExpression: `${STILL_IN_DOUBT} AND attribute_exists(#message)`,
        ExpressionAttributeNames: { ...STATUS_NAMES, '#message': 'message' },
        ExpressionAttributeValues: { ':inDoubt': IN_DOUBT, ':nowSec': Math.floor(now / 1000) },
        ReturnValues: 'ALL_OLD',
        ReturnValuesOnConditionCheckFailure: 'ALL_OLD',
      }),
    );
    record = Attributes as IdempotencyRecord;
  } catch (error) {
    throw notResolvable(error, id, now);
  }
  const message = record.message as NonNullable<IdempotencyRecord['message']>; // the condition required it
  try {
    const { MessageId } = await target.sqs.send(
      new SendMessageCommand({
        QueueUrl: target.resources.queueUrl,
        MessageBody: message.body,
        MessageGroupId: message.groupId,
        // Fresh: the message's own ids may still be in SQS's 5-minute deduplication window.
        MessageDeduplicationId: randomUUID(),
      }),
    );
    return { id, as: 'retry', groupId: message.groupId, messageId: String(MessageId) };
  } catch (sendError) {
    throw await restore(documents, target.resources.idempotencyTableName, record, sendError);
  }
}

/** Puts back a record whose message could not be re-sent, so that the operator can try again. */
async function restore(
  documents: DynamoDBDocumentClient,
  tableName: string,
  record: IdempotencyRecord,
  sendError: unknown,
): Promise<ResendFailedError> {
  const failure = `Could not send the message of ${record.id} again (${String(sendError)})`;
  try {
    await documents.send(
      new PutCommand({ TableName: tableName, Item: record, ConditionExpression: 'attribute_not_exists(id)' }),
    );
    return new ResendFailedError(`${failure}. The record is IN_DOUBT again: retry the command.`, {
      cause: sendError,
    });
  } catch (restoreError) {
    return new ResendFailedError(
      `${failure}, and the record could not be put back (${String(restoreError)}). Publish the message ` +
        `again yourself, in group ${record.message?.groupId}: ${record.message?.body}`,
      { cause: sendError },
    );
  }
}

/** Why a conditional write on the record failed: no such record, not IN_DOUBT, or no message kept. */
function notResolvable(error: unknown, id: string, nowMs: number): unknown {
  if (!(error instanceof ConditionalCheckFailedException)) return error;
  const existing = error.Item
    ? (unmarshall(error.Item as Record<string, AttributeValue>) as IdempotencyRecord)
    : undefined;
  if (!existing || existing.expiresAt * 1000 <= nowMs) {
    const hint = id.includes('#') ? '' : ' Record ids are namespace#key, e.g. notifications#order-7-mail.';
    return new UnknownRecordError(
      `No idempotency record ${id}.${hint} \`oncely in-doubt list\` shows the records in doubt.`,
    );
  }
  if (existing.status !== IN_DOUBT) {
    return new RecordNotInDoubtError(
      `${id} is ${existing.status}, not IN_DOUBT: there is nothing to resolve.`,
    );
  }
  return new MessageNotKeptError(
    `${id} is IN_DOUBT but kept no message to send again (it became IN_DOUBT before records kept ` +
      `their message, or the message was larger than ${MAX_KEPT_MESSAGE_BYTES / 1024} KB). Publish the ` +
      `message again under a new key, then resolve this record with \`oncely in-doubt resolve ${id} --as completed\`.`,
  );
}
