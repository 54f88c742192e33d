import {
  type AttributeValue,
  ConditionalCheckFailedException,
  type DynamoDBClient,
} from '@aws-sdk/client-dynamodb';
import type { SQSClient } from '@aws-sdk/client-sqs';
import { DynamoDBDocumentClient, GetCommand, QueryCommand, UpdateCommand } from '@aws-sdk/lib-dynamodb';
import { unmarshall } from '@aws-sdk/util-dynamodb';
import { APPEND_HISTORY, appendValues } from '../lambdas/idempotency/history.js';
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
  InvalidPageTokenError,
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

/** How many records `oncely in-doubt list` shows at once unless given `--limit`. */
export const DEFAULT_UNRESOLVED_LIMIT = 100;

/** One page of `oncely in-doubt list`: its `--json` document. */
export interface UnresolvedPage {
  /** At most the limit's records, oldest first. */
  records: UnresolvedRecord[];
  /**
   * Present when more records may follow: pass it back (`--after`) for the next page. It names where
   * each status's listing stopped, so records resolved meanwhile are skipped and none is shown twice.
   */
  next?: string;
}

export interface ListUnresolvedOptions {
  /** The most records to show (and to read the kept message's group of). Default {@link DEFAULT_UNRESOLVED_LIMIT}. */
  limit?: number;
  /** A page's `next`: list the records after the ones it showed. */
  after?: string;
}

/** Where one status's listing stopped: the last record shown, as the index orders it. */
interface IndexPosition {
  id: string;
  updatedAt: number;
}
type PageToken = Partial<Record<UnresolvedReason, IndexPosition>>;

/**
 * The records an operator must resolve, oldest first, `limit` at a time: those IN_DOUBT and those
 * whose retry did not finish. Queries the sparse index of unresolved records (never the whole table),
 * which projects no kept message, reading at most `limit` of each status; then reads the group of the
 * records it shows, and of no other, from the table (whole items: what the read costs, see
 * docs/operations.md).
 */
export async function listUnresolved(
  target: InDoubtTarget,
  options: ListUnresolvedOptions = {},
): Promise<UnresolvedPage> {
  const limit = options.limit ?? DEFAULT_UNRESOLVED_LIMIT;
  const after = options.after === undefined ? {} : decodePageToken(options.after);
  const nowMs = Date.now();
  const listings = await Promise.all(
    UNRESOLVED_REASONS.map(async (reason) => ({
      reason,
      ...(await onUnresolvedIndex((indexName) =>
        unresolvedOn(target, indexName, reason, { limit, after: after[reason], nowMs }),
      )),
    })),
  );
  const items = listings
    .flatMap((listing) => listing.items)
    .sort((a, b) => (a.updatedAt ?? 0) - (b.updatedAt ?? 0))
    .slice(0, limit);
  const next: PageToken = { ...after };
  for (const item of items) {
    next[item.unresolved as UnresolvedReason] = { id: String(item.id), updatedAt: Number(item.updatedAt) };
  }
  const more = listings.some(
    (listing) => listing.more || listing.items.some((item) => !items.includes(item)),
  );
  const groups = await keptGroups(
    DynamoDBDocumentClient.from(target.dynamodb),
    target.resources.idempotencyTableName,
    items.map((item) => String(item.id)),
  );
  const records = items.map((item) => ({
    id: String(item.id),
    status: item.unresolved as UnresolvedReason,
    reason: item.error,
    since: item.updatedAt ? new Date(item.updatedAt).toISOString() : undefined,
    attempts: item.attempts,
    groupId: groups.get(String(item.id)),
    ...(item.expiresAt === undefined ? {} : { expiresAt: new Date(item.expiresAt * 1000).toISOString() }),
  }));
  return more ? { records, next: encodePageToken(next) } : { records };
}

/**
 * The oldest `limit` live records of `reason` on the index `indexName` after `after`, with what the
 * index projects; `more` when the index may hold further ones.
 */
async function unresolvedOn(
  target: InDoubtTarget,
  indexName: string,
  reason: UnresolvedReason,
  { limit, after, nowMs }: { limit: number; after: IndexPosition | undefined; nowMs: number },
): Promise<{ items: Partial<IdempotencyRecord>[]; more: boolean }> {
  const documents = DynamoDBDocumentClient.from(target.dynamodb);
  const items: Partial<IdempotencyRecord>[] = [];
  let startKey: Record<string, unknown> | undefined = after && {
    id: after.id,
    [UNRESOLVED_ATTRIBUTE]: reason,
    updatedAt: after.updatedAt,
  };
  do {
    const page = await documents.send(
      new QueryCommand({
        TableName: target.resources.idempotencyTableName,
        IndexName: indexName,
        KeyConditionExpression: '#unresolved = :reason',
        // No expiresAt: parked by this version, it does not expire. TTL deletion is lazy: an expired
        // record (parked by an older version) is gone for the consumer, so for us too.
        FilterExpression: 'attribute_not_exists(expiresAt) OR expiresAt > :nowSec',
        ProjectionExpression: 'id, #unresolved, #error, updatedAt, attempts, expiresAt',
        ExpressionAttributeNames: { '#unresolved': UNRESOLVED_ATTRIBUTE, '#error': 'error' },
        ExpressionAttributeValues: { ':reason': reason, ':nowSec': Math.floor(nowMs / 1000) },
        // Evaluated before the filter: never more than the page still needs.
        Limit: limit - items.length,
        ExclusiveStartKey: startKey,
      }),
    );
    items.push(...((page.Items ?? []) as Partial<IdempotencyRecord>[]));
    startKey = page.LastEvaluatedKey;
  } while (startKey && items.length < limit);
  return { items, more: startKey !== undefined };
}

function encodePageToken(token: PageToken): string {
  return Buffer.from(JSON.stringify(token)).toString('base64url');
}

function decodePageToken(text: string): PageToken {
  const invalid = () =>
    new InvalidPageTokenError(
      `--after "${text}" is not a page token: pass back the \`next\` a previous \`oncely in-doubt list\` printed, ` +
        'or leave --after out to start from the oldest record.',
    );
  let token: unknown;
  try {
    token = JSON.parse(Buffer.from(text, 'base64url').toString('utf8'));
  } catch {
    throw invalid();
  }
  if (typeof token !== 'object' || token === null || Array.isArray(token)) throw invalid();
  for (const [reason, position] of Object.entries(token)) {
    const { id, updatedAt } = (position ?? {}) as Partial<IndexPosition>;
    const known = (UNRESOLVED_REASONS as readonly string[]).includes(reason);
    if (!known || typeof id !== 'string' || !Number.isFinite(updatedAt)) throw invalid();
  }
  return token as PageToken;
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
          `SET #status = :completed, updatedAt = :nowMs, expiresAt = :expiresAt, ${APPEND_HISTORY} ` +
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
          ...appendValues({ s: 'COMPLETED', t: nowMs, o: 'resolved-completed' }),
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
