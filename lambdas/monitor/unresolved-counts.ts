import { type DynamoDBClient, paginateQuery } from '@aws-sdk/client-dynamodb';
import {
  EXPIRES_AT_ATTRIBUTE,
  UNRESOLVED_ATTRIBUTE,
  UNRESOLVED_REASONS,
  type UnresolvedReason,
} from '../idempotency/record.js';
import { onUnresolvedIndex } from '../idempotency/unresolved-index.js';

export interface UnresolvedCounts {
  inDoubt: number;
  retryPending: number;
}

/**
 * Counts the live records of each unresolved reason through the sparse index: a query per
 * reason, paginated (a page stops at 1 MB: some 3,000 records, the index projecting no message),
 * never a scan. A record without `expiresAt` counts: unresolved records do not expire (DESIGN §3). One
 * past its `expiresAt` (parked by an older version) counts as absent, as everywhere else, even
 * before TTL deletes it.
 */
export async function countUnresolved(
  client: DynamoDBClient,
  tableName: string,
  nowSeconds: number,
): Promise<UnresolvedCounts> {
  const [inDoubt = 0, retryPending = 0] = await Promise.all(
    UNRESOLVED_REASONS.map((reason) => countReason(client, tableName, reason, nowSeconds)),
  );
  return { inDoubt, retryPending };
}

async function countReason(
  client: DynamoDBClient,
  tableName: string,
  reason: UnresolvedReason,
  nowSeconds: number,
): Promise<number> {
  return onUnresolvedIndex((indexName) => countOn(client, tableName, indexName, reason, nowSeconds));
}

async function countOn(
  client: DynamoDBClient,
  tableName: string,
  indexName: string,
  reason: UnresolvedReason,
  nowSeconds: number,
): Promise<number> {
  const pages = paginateQuery(
    { client },
    {
      TableName: tableName,
      IndexName: indexName,
      Select: 'COUNT',
      KeyConditionExpression: '#reason = :reason',
      FilterExpression: 'attribute_not_exists(#expiresAt) OR #expiresAt > :now',
      ExpressionAttributeNames: { '#reason': UNRESOLVED_ATTRIBUTE, '#expiresAt': EXPIRES_AT_ATTRIBUTE },
      ExpressionAttributeValues: { ':reason': { S: reason }, ':now': { N: String(nowSeconds) } },
    },
  );
  let count = 0;
  for await (const page of pages) count += page.Count ?? 0;
  return count;
}
