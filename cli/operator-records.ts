import {
  type AttributeValue,
  ConditionalCheckFailedException,
  type DynamoDBClient,
} from '@aws-sdk/client-dynamodb';
import { DynamoDBDocumentClient, GetCommand, QueryCommand, UpdateCommand } from '@aws-sdk/lib-dynamodb';
import { unmarshall } from '@aws-sdk/util-dynamodb';
import { APPEND_HISTORY, appendValues } from '../lambdas/idempotency/history.js';
import {
  type IdempotencyRecord,
  UNRESOLVED_ATTRIBUTE,
  type UnresolvedReason,
} from '../lambdas/idempotency/record.js';
import { onUnresolvedIndex } from '../lambdas/idempotency/unresolved-index.js';
import { keptGroups } from './in-doubt-groups.js';

/** Where one status's listing stopped: the last record shown, as the index orders it. */
export interface IndexPosition {
  id: string;
  updatedAt: number;
}

/**
 * What a conditional write of an operator found: it wrote, or its condition failed on the record as
 * it is now (`cause`: the store's own failure, for the error's `cause`).
 */
export type OperatorWrite =
  | { written: true; record?: IdempotencyRecord }
  | { written: false; now: IdempotencyRecord | undefined; cause: unknown };

/**
 * The records `oncely in-doubt` and `oncely history` read and write (DESIGN §3, §3.1), in one store:
 * the idempotency table, or the Valkey cache of a pipeline whose lease records are there. The
 * commands' logic (what is resolvable, conflicts, the retry's steps, merging two stores' listings)
 * is the callers'; a store does one read or one conditional write per call, each as the consumer's
 * store keeps the record: the same fields, the same history entries, the same unresolved index.
 */
export interface OperatorRecords {
  readonly kind: 'dynamodb' | 'valkey';
  /**
   * The oldest `limit` live records of `reason` after `after`, with at least `id`, `unresolved`,
   * `error`, `updatedAt`, `attempts`, `expiresAt`; `more` when the index may hold further ones.
   */
  unresolved(
    reason: UnresolvedReason,
    options: { limit: number; after: IndexPosition | undefined; nowMs: number },
  ): Promise<{ items: Partial<IdempotencyRecord>[]; more: boolean }>;
  /** The group of each record's kept message, by id (absent: none kept, or no such record). */
  keptGroups(ids: readonly string[]): Promise<Map<string, string>>;
  /** The record (or dead-letter log) `id` as it is now, strongly consistent; undefined if there is none. */
  read(id: string): Promise<IdempotencyRecord | undefined>;
  /**
   * `--as completed`: COMPLETED, a full TTL (`expiresAt`), off the list, its message and lease gone,
   * a `resolved-completed` history entry; if the record is still as `read` was read.
   */
  resolveCompleted(read: IdempotencyRecord, at: { nowMs: number; expiresAt: number }): Promise<OperatorWrite>;
  /**
   * `--as retry` step (a): an IN_DOUBT record that is alive and keeps its message becomes FAILED,
   * RETRY_PENDING, without expiry, with a `resolved-retry` entry; `record`: it as written.
   */
  markRetryPending(id: string, nowMs: number): Promise<OperatorWrite>;
  /**
   * `--as retry` step (c): a FAILED, RETRY_PENDING record leaves the list, loses its message, gets
   * `expiresAt` and a `retry-sent` entry. One try: a failure other than the condition is thrown.
   */
  clearRetryPending(id: string, expiresAt: number): Promise<OperatorWrite>;
}

/** The idempotency table's records, as the in-doubt commands have always read and written them. */
export class DynamoDBOperatorRecords implements OperatorRecords {
  readonly kind = 'dynamodb' as const;
  readonly #documents: DynamoDBDocumentClient;
  readonly #tableName: string;

  constructor(dynamodb: DynamoDBClient, tableName: string) {
    this.#documents = DynamoDBDocumentClient.from(dynamodb);
    this.#tableName = tableName;
  }

  unresolved(
    reason: UnresolvedReason,
    options: { limit: number; after: IndexPosition | undefined; nowMs: number },
  ): Promise<{ items: Partial<IdempotencyRecord>[]; more: boolean }> {
    return onUnresolvedIndex((indexName) => this.#unresolvedOn(indexName, reason, options));
  }

  /**
   * The oldest `limit` live records of `reason` on the index `indexName` after `after`, with what the
   * index projects; `more` when the index may hold further ones.
   */
  async #unresolvedOn(
    indexName: string,
    reason: UnresolvedReason,
    { limit, after, nowMs }: { limit: number; after: IndexPosition | undefined; nowMs: number },
  ): Promise<{ items: Partial<IdempotencyRecord>[]; more: boolean }> {
    const items: Partial<IdempotencyRecord>[] = [];
    let startKey: Record<string, unknown> | undefined = after && {
      id: after.id,
      [UNRESOLVED_ATTRIBUTE]: reason,
      updatedAt: after.updatedAt,
    };
    do {
      const page = await this.#documents.send(
        new QueryCommand({
          TableName: this.#tableName,
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

  keptGroups(ids: readonly string[]): Promise<Map<string, string>> {
    return keptGroups(this.#documents, this.#tableName, ids);
  }

  async read(id: string): Promise<IdempotencyRecord | undefined> {
    const { Item } = await this.#documents.send(
      new GetCommand({ TableName: this.#tableName, Key: { id }, ConsistentRead: true }),
    );
    return Item as IdempotencyRecord | undefined;
  }

  async resolveCompleted(
    record: IdempotencyRecord,
    { nowMs, expiresAt }: { nowMs: number; expiresAt: number },
  ): Promise<OperatorWrite> {
    return this.#conditional(
      new UpdateCommand({
        TableName: this.#tableName,
        Key: { id: record.id },
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
  }

  markRetryPending(id: string, nowMs: number): Promise<OperatorWrite> {
    return this.#conditional(
      new UpdateCommand({
        TableName: this.#tableName,
        Key: { id },
        // An older version's IN_DOUBT record still has an expiry: unresolved, it must not expire.
        UpdateExpression: `SET #status = :failed, #unresolved = :retryPending, updatedAt = :nowMs, ${APPEND_HISTORY} REMOVE expiresAt`,
        ConditionExpression:
          '#status = :inDoubt AND (attribute_not_exists(expiresAt) OR expiresAt > :nowSec) AND ' +
          'attribute_exists(#message)',
        ExpressionAttributeNames: {
          '#status': 'status',
          '#unresolved': UNRESOLVED_ATTRIBUTE,
          '#message': 'message',
        },
        ExpressionAttributeValues: {
          ':failed': 'FAILED',
          ':retryPending': 'RETRY_PENDING',
          ':inDoubt': 'IN_DOUBT',
          ':nowMs': nowMs,
          ':nowSec': Math.floor(nowMs / 1000),
          ...appendValues({ s: 'FAILED', t: nowMs, o: 'resolved-retry' }),
        },
        ReturnValues: 'ALL_NEW',
        ReturnValuesOnConditionCheckFailure: 'ALL_OLD',
      }),
    );
  }

  clearRetryPending(id: string, expiresAt: number): Promise<OperatorWrite> {
    return this.#conditional(
      new UpdateCommand({
        TableName: this.#tableName,
        Key: { id },
        UpdateExpression: `SET expiresAt = :expiresAt, ${APPEND_HISTORY} REMOVE #unresolved, #message`,
        ConditionExpression: '#status = :failed AND #unresolved = :retryPending',
        ExpressionAttributeNames: {
          '#status': 'status',
          '#unresolved': UNRESOLVED_ATTRIBUTE,
          '#message': 'message',
        },
        ExpressionAttributeValues: {
          ':failed': 'FAILED',
          ':retryPending': 'RETRY_PENDING',
          ':expiresAt': expiresAt,
          ...appendValues({ s: 'FAILED', t: Date.now(), o: 'retry-sent' }),
        },
        ReturnValuesOnConditionCheckFailure: 'ALL_OLD',
      }),
    );
  }

  /** One conditional update: written (with the record as written, if asked), or what failed its condition. */
  async #conditional(update: UpdateCommand): Promise<OperatorWrite> {
    try {
      const { Attributes } = await this.#documents.send(update);
      return { written: true, ...(Attributes ? { record: Attributes as IdempotencyRecord } : {}) };
    } catch (error) {
      if (!(error instanceof ConditionalCheckFailedException)) throw error;
      return { written: false, now: itemOf(error), cause: error };
    }
  }
}

/** The record a failed conditional write returned (ALL_OLD), if there was one. */
export function itemOf(error: ConditionalCheckFailedException): IdempotencyRecord | undefined {
  return error.Item
    ? (unmarshall(error.Item as Record<string, AttributeValue>) as IdempotencyRecord)
    : undefined;
}
