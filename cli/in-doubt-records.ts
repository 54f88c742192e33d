import {
  type AttributeValue,
  ConditionalCheckFailedException,
  type DynamoDBClient,
} from '@aws-sdk/client-dynamodb';
import type { SQSClient } from '@aws-sdk/client-sqs';
import { DynamoDBDocumentClient, GetCommand, paginateQuery, UpdateCommand } from '@aws-sdk/lib-dynamodb';
import { unmarshall } from '@aws-sdk/util-dynamodb';
import type { StoredError } from '../lambdas/idempotency/index.js';
import {
  type IdempotencyRecord,
  isExpired,
  MAX_KEPT_MESSAGE_BYTES,
  UNRESOLVED_ATTRIBUTE,
  UNRESOLVED_REASONS,
  type UnresolvedReason,
} from '../lambdas/idempotency/record.js';
import { onUnresolvedIndex } from '../lambdas/idempotency/unresolved-index.js';
import type { PipelineResources } from '../lib/constructs/pipeline-outputs.js';
import { keptGroups } from './in-doubt-groups.js';
import {
  DedupHorizonUnknownError,
  MessageNotKeptError,
  RecordNotInDoubtError,
  ResolutionConflictError,
  UnknownRecordError,
} from './operations-errors.js';

/** A record an operator must resolve, as `oncely in-doubt list` shows it. */
export interface UnresolvedRecord {
  /** `namespace#key`: what `oncely in-doubt resolve` takes. */
  id: string;
  /** IN_DOUBT: decide whether the effect happened. RETRY_PENDING: a `--as retry` that did not finish. */
  status: UnresolvedReason;
  /** The error that made the effect doubtful. */
  reason?: StoredError;
  /** ISO time it entered this status. */
  since?: string;
  attempts?: number;
  /** The group its kept message goes back to; absent when the record kept no message (no retry then). */
  groupId?: string;
  /**
   * ISO time the record (and its kept message) expires. Absent for a record parked by this version:
   * it does not expire while unresolved. One parked by an older version has one until the monitor's
   * next run removes it; past it, the record is gone.
   */
  expiresAt?: string;
}

export type Resolution =
  | { id: string; as: 'completed' }
  /**
   * The message is back on the queue as `messageId`. `notCleared` says why the record could not be
   * taken off the list afterwards (it leaves the list once the consumer runs the message).
   */
  | {
      id: string;
      as: 'retry';
      groupId: string;
      messageId: string;
      /**
       * The record's state once the message was sent: FAILED (the consumer runs the message),
       * RETRY_PENDING (`notCleared`), or what someone else made it meanwhile: IN_PROGRESS or a later
       * state (the consumer got to it), COMPLETED (it ran, or was resolved `--as completed`: the copy
       * sent is a duplicate, never run).
       */
      status: string;
      notCleared?: string;
      /** `--republish`: the message was sent stamped with a fresh `publishedAt`. */
      republished?: true;
    };

/** What in-doubt operations need: the idempotency table, and the queue a retry goes to. */
export interface InDoubtTarget {
  dynamodb: DynamoDBClient;
  sqs: SQSClient;
  resources: Pick<PipelineResources, 'idempotencyTableName' | 'queueUrl' | 'idempotencyTtlSeconds'>;
}

/**
 * The records an operator must resolve, oldest first: those IN_DOUBT and those whose retry did not
 * finish. Queries the sparse index of unresolved records (never the whole table), page by page; it
 * projects no kept message, so the groups of the records listed are read from the table after.
 */
export async function listUnresolved(target: InDoubtTarget): Promise<UnresolvedRecord[]> {
  const documents = DynamoDBDocumentClient.from(target.dynamodb);
  const nowMs = Date.now();
  const items: Partial<IdempotencyRecord>[] = [];
  for (const reason of UNRESOLVED_REASONS) {
    items.push(...(await onUnresolvedIndex((indexName) => unresolvedOn(target, indexName, reason, nowMs))));
  }
  items.sort((a, b) => (a.updatedAt ?? 0) - (b.updatedAt ?? 0));
  const groups = await keptGroups(
    documents,
    target.resources.idempotencyTableName,
    items.map((item) => String(item.id)),
  );
  return items.map((item) => ({
    id: String(item.id),
    status: item.unresolved as UnresolvedReason,
    reason: item.error,
    since: item.updatedAt ? new Date(item.updatedAt).toISOString() : undefined,
    attempts: item.attempts,
    groupId: groups.get(String(item.id)),
    ...(item.expiresAt === undefined ? {} : { expiresAt: new Date(item.expiresAt * 1000).toISOString() }),
  }));
}

/** The live records of `reason` on the index `indexName`, with what the index projects. */
async function unresolvedOn(
  target: InDoubtTarget,
  indexName: string,
  reason: UnresolvedReason,
  nowMs: number,
): Promise<Partial<IdempotencyRecord>[]> {
  const items: Partial<IdempotencyRecord>[] = [];
  const pages = paginateQuery(
    { client: DynamoDBDocumentClient.from(target.dynamodb) },
    {
      TableName: target.resources.idempotencyTableName,
      IndexName: indexName,
      KeyConditionExpression: '#unresolved = :reason',
      // No expiresAt: parked by this version, it does not expire. TTL deletion is lazy: an expired
      // record (parked by an older version) is gone for the consumer, so for us too.
      FilterExpression: 'attribute_not_exists(expiresAt) OR expiresAt > :nowSec',
      ProjectionExpression: 'id, #unresolved, #error, updatedAt, attempts, expiresAt',
      ExpressionAttributeNames: { '#unresolved': UNRESOLVED_ATTRIBUTE, '#error': 'error' },
      ExpressionAttributeValues: { ':reason': reason, ':nowSec': Math.floor(nowMs / 1000) },
    },
  );
  for await (const page of pages) items.push(...((page.Items ?? []) as Partial<IdempotencyRecord>[]));
  return items;
}

/**
 * `--as completed`: the effect happened. The record becomes COMPLETED, so the message never runs
 * again (a redriven or re-sent copy counts as a duplicate), and lives a full TTL from now, as a
 * record completed now would. Works on an IN_DOUBT record and on one
 * pending a retry; the write is conditioned on the state it was read in, so a concurrent resolution
 * or the consumer running a re-sent message is reported, never overwritten.
 */
export async function resolveAsCompleted(target: InDoubtTarget, id: string): Promise<Resolution> {
  const documents = DynamoDBDocumentClient.from(target.dynamodb);
  const tableName = target.resources.idempotencyTableName;
  const nowMs = Date.now();
  const expiresAt = resolvedExpiresAt(target, nowMs);
  const { Item } = await documents.send(
    new GetCommand({ TableName: tableName, Key: { id }, ConsistentRead: true }),
  );
  const record = resolvable(Item as IdempotencyRecord | undefined, id, nowMs);
  try {
    await documents.send(
      new UpdateCommand({
        TableName: tableName,
        Key: { id },
        UpdateExpression:
          'SET #status = :completed, updatedAt = :nowMs, expiresAt = :expiresAt ' +
          'REMOVE #unresolved, #message, leaseToken, leaseExpiresAt',
        ConditionExpression:
          '#status = :readStatus AND ' +
          (record.unresolved ? '#unresolved = :readUnresolved' : 'attribute_not_exists(#unresolved)') +
          (record.updatedAt === undefined ? '' : ' AND updatedAt = :readUpdatedAt'),
        ExpressionAttributeNames: {
          '#status': 'status',
          '#unresolved': UNRESOLVED_ATTRIBUTE,
          '#message': 'message',
        },
        ExpressionAttributeValues: {
          ':completed': 'COMPLETED',
          ':nowMs': nowMs,
          ':expiresAt': expiresAt,
          ':readStatus': record.status,
          ...(record.unresolved ? { ':readUnresolved': record.unresolved } : {}),
          ...(record.updatedAt === undefined ? {} : { ':readUpdatedAt': record.updatedAt }),
        },
        ReturnValuesOnConditionCheckFailure: 'ALL_OLD',
      }),
    );
  } catch (error) {
    if (!(error instanceof ConditionalCheckFailedException)) throw error;
    throw new ResolutionConflictError(
      `${id} changed while this command resolved it: it is now ${stateOf(itemOf(error), nowMs)} (another ` +
        '`oncely in-doubt resolve`, or the consumer running a re-sent message, got there first). This command ' +
        'changed nothing; `oncely in-doubt list` shows whether it still needs resolving.',
      { cause: error },
    );
  }
  return { id, as: 'completed' };
}

/**
 * The record, if an operator can resolve it: IN_DOUBT, or FAILED and pending a retry. Otherwise
 * the error that says why not.
 */
export function resolvable(
  record: IdempotencyRecord | undefined,
  id: string,
  nowMs: number,
): IdempotencyRecord {
  const state = stateOf(record, nowMs);
  if (record && (state === 'IN_DOUBT' || state === 'RETRY_PENDING')) return record;
  if (state === 'gone') {
    const hint = id.includes('#') ? '' : ' Record ids are namespace#key, e.g. notifications#order-7-mail.';
    throw new UnknownRecordError(
      `No idempotency record ${id}.${hint} \`oncely in-doubt list\` shows the records in doubt.`,
    );
  }
  const hint =
    state === 'FAILED'
      ? ' Its message may be on the queue (a `--as retry` sent it): the consumer runs it, or ran it and it ' +
        'failed retryably, to run again on its next delivery.'
      : '';
  throw new RecordNotInDoubtError(`${id} is ${state}, not IN_DOUBT: there is nothing to resolve.${hint}`);
}

/**
 * The `expiresAt` (epoch seconds) a record gets once resolved: a full TTL from now. Every copy of its
 * message was published before now, so the record outlives each copy's dedup horizon (DESIGN §2).
 */
export function resolvedExpiresAt(target: InDoubtTarget, nowMs: number): number {
  return Math.floor(nowMs / 1000) + ttlSecondsOf(target);
}

/** The records' lifetime, from the pipeline's `IdempotencyTtlSeconds` output. */
export function ttlSecondsOf(target: InDoubtTarget): number {
  const ttlSeconds = Number(target.resources.idempotencyTtlSeconds);
  if (!Number.isInteger(ttlSeconds) || ttlSeconds <= 0) {
    throw new DedupHorizonUnknownError(
      `The pipeline's idempotency TTL output is "${target.resources.idempotencyTtlSeconds}", not a number of ` +
        'seconds, so a resolved record cannot be given its lifetime back. Redeploy the stack (or restart ' +
        '`oncely local`) from this version. Nothing was changed.',
    );
  }
  return ttlSeconds;
}

/** Why a record IN_DOUBT cannot be retried from here. */
export function messageNotKept(id: string): MessageNotKeptError {
  return new MessageNotKeptError(
    `${id} is IN_DOUBT but kept no message to send again (it became IN_DOUBT before records kept ` +
      `their message, or the message was larger than ${MAX_KEPT_MESSAGE_BYTES / 1024} KB). Publish the ` +
      `message again under a new key, then resolve this record with \`oncely in-doubt resolve ${id} --as completed\`.`,
  );
}

/** The record a failed conditional write returned (ALL_OLD), if there was one. */
export function itemOf(error: ConditionalCheckFailedException): IdempotencyRecord | undefined {
  return error.Item
    ? (unmarshall(error.Item as Record<string, AttributeValue>) as IdempotencyRecord)
    : undefined;
}

/** A record's state as an operator sees it: its status, RETRY_PENDING for a FAILED one pending a retry. */
export function stateOf(record: IdempotencyRecord | undefined, nowMs: number): string {
  if (!record || isExpired(record, nowMs)) return 'gone';
  return record.status === 'FAILED' && record.unresolved === 'RETRY_PENDING'
    ? 'RETRY_PENDING'
    : record.status;
}
