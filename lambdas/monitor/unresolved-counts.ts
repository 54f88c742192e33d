import { type AttributeValue, type DynamoDBClient, paginateQuery } from '@aws-sdk/client-dynamodb';
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

/** What one read of the unresolved index finds: the counts, and the records that still expire. */
export interface UnresolvedSurvey {
  counts: UnresolvedCounts;
  /** Live unresolved records parked by a version that gave them an expiry, by reason. */
  expiring: { reason: UnresolvedReason; id: AttributeValue }[];
}

/**
 * Reads the live records of each unresolved reason through the sparse index: one paginated query
 * per reason (a page stops at 1 MB: some 3,000 records, the index projecting no message), never a
 * scan. Each counts its records and keeps the ids of those that still have an expiry, so the
 * monitor reads the index once a run (docs/capacity.md). A record without `expiresAt` counts:
 * unresolved records do not expire (DESIGN §3). One past its `expiresAt` (parked by an older
 * version) counts as absent, as everywhere else, even before TTL deletes it.
 */
export async function surveyUnresolved(
  client: DynamoDBClient,
  tableName: string,
  nowSeconds: number,
): Promise<UnresolvedSurvey> {
  const [inDoubt, retryPending] = await Promise.all(
    UNRESOLVED_REASONS.map((reason) =>
      onUnresolvedIndex((indexName) => surveyReason(client, tableName, indexName, reason, nowSeconds)),
    ),
  );
  return {
    counts: { inDoubt: inDoubt?.count ?? 0, retryPending: retryPending?.count ?? 0 },
    expiring: [...(inDoubt?.expiring ?? []), ...(retryPending?.expiring ?? [])],
  };
}

async function surveyReason(
  client: DynamoDBClient,
  tableName: string,
  indexName: string,
  reason: UnresolvedReason,
  nowSeconds: number,
): Promise<{ count: number; expiring: UnresolvedSurvey['expiring'] }> {
  const pages = paginateQuery(
    { client },
    {
      TableName: tableName,
      IndexName: indexName,
      KeyConditionExpression: '#reason = :reason',
      FilterExpression: 'attribute_not_exists(#expiresAt) OR #expiresAt > :now',
      // Read units count what the index item weighs, not what is returned: only what is needed.
      ProjectionExpression: 'id, #expiresAt',
      ExpressionAttributeNames: { '#reason': UNRESOLVED_ATTRIBUTE, '#expiresAt': EXPIRES_AT_ATTRIBUTE },
      ExpressionAttributeValues: { ':reason': { S: reason }, ':now': { N: String(nowSeconds) } },
    },
  );
  let count = 0;
  const expiring: UnresolvedSurvey['expiring'] = [];
  for await (const page of pages) {
    count += page.Count ?? 0;
    for (const item of page.Items ?? []) {
      if (item.id && item[EXPIRES_AT_ATTRIBUTE]) expiring.push({ reason, id: item.id });
    }
  }
  return { count, expiring };
}
