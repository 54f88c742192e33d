import type { DynamoDBClient } from '@aws-sdk/client-dynamodb';
import { BatchGetCommand, DynamoDBDocumentClient } from '@aws-sdk/lib-dynamodb';
import type { IdempotencyRecord } from '../lambdas/idempotency/record.js';
import type { PipelineResources } from '../lib/constructs/pipeline-outputs.js';

/** BatchGetItem's most keys per request. */
const BATCH_GET_KEYS = 100;

/**
 * The records of `ids` that exist, each with the attributes `projection` names (`names` maps its
 * placeholders), read in batches of 100 by key, never by scan. Keys DynamoDB leaves unprocessed
 * (throttling) are asked again until none is left.
 */
export async function readRecordsByKey(
  documents: DynamoDBDocumentClient,
  tableName: string,
  ids: readonly string[],
  projection: { expression: string; names?: Record<string, string> },
): Promise<Record<string, unknown>[]> {
  const items: Record<string, unknown>[] = [];
  for (let start = 0; start < ids.length; start += BATCH_GET_KEYS) {
    let keys: Record<string, unknown>[] = ids.slice(start, start + BATCH_GET_KEYS).map((id) => ({ id }));
    while (keys.length > 0) {
      const { Responses, UnprocessedKeys } = await documents.send(
        new BatchGetCommand({
          RequestItems: {
            [tableName]: {
              Keys: keys,
              ProjectionExpression: projection.expression,
              ...(projection.names && { ExpressionAttributeNames: projection.names }),
            },
          },
        }),
      );
      items.push(...(Responses?.[tableName] ?? []));
      keys = UnprocessedKeys?.[tableName]?.Keys ?? [];
    }
  }
  return items;
}

/**
 * Of the records `ids`, those IN_PROGRESS under a lease that has not run out: running now (two reads
 * of 100 at most; with `valkey`, the lease records cache's too, one read each).
 */
export async function recordsInProgress(
  pipeline: {
    dynamodb: DynamoDBClient;
    resources: Pick<PipelineResources, 'idempotencyTableName'>;
    /** The lease records cache's records (an `OperatorRecords`), when the pipeline has one. */
    valkey?: { read(id: string): Promise<IdempotencyRecord | undefined> };
  },
  ids: readonly string[],
  nowMs = Date.now(),
): Promise<Set<string>> {
  if (ids.length === 0) return new Set();
  const { valkey } = pipeline;
  const [inTable, inCache] = await Promise.all([
    readRecordsByKey(
      DynamoDBDocumentClient.from(pipeline.dynamodb),
      pipeline.resources.idempotencyTableName,
      ids,
      { expression: 'id, #status, leaseExpiresAt', names: { '#status': 'status' } },
    ),
    valkey ? Promise.all(ids.map((id) => valkey.read(id))) : [],
  ]);
  const items: Record<string, unknown>[] = [
    ...inTable,
    ...inCache.flatMap((record) => (record ? [record as unknown as Record<string, unknown>] : [])),
  ];
  return new Set(
    items
      .filter((item) => item.status === 'IN_PROGRESS' && Number(item.leaseExpiresAt) > nowMs)
      .map((item) => String(item.id)),
  );
}
