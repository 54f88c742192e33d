import {
  type AttributeValue,
  ConditionalCheckFailedException,
  type DynamoDBClient,
  paginateQuery,
  UpdateItemCommand,
} from '@aws-sdk/client-dynamodb';
import { EXPIRES_AT_ATTRIBUTE, UNRESOLVED_ATTRIBUTE, UNRESOLVED_REASONS } from '../idempotency/record.js';
import { onUnresolvedIndex } from '../idempotency/unresolved-index.js';

/**
 * Removes the expiry of every live unresolved record that still has one: records parked by a
 * version that gave them a TTL (this one parks them without, DESIGN §3). Unresolved, a record keeps
 * a message acknowledged long ago; expired, both would be gone. Each removal is conditioned on the
 * record being still unresolved and still alive, so a record resolved meanwhile (which has its own
 * expiry again) or already expired (gone for everyone) is left as it is. Returns how many it kept.
 */
export async function removeUnresolvedExpiries(
  client: DynamoDBClient,
  tableName: string,
  nowSeconds: number,
): Promise<number> {
  let kept = 0;
  for (const reason of UNRESOLVED_REASONS) {
    const ids = await onUnresolvedIndex((indexName) =>
      expiringIds(client, tableName, indexName, reason, nowSeconds),
    );
    for (const id of ids) if (await removeExpiry(client, tableName, id, reason, nowSeconds)) kept++;
  }
  return kept;
}

/** The ids of the live records of `reason` that still have an expiry. */
async function expiringIds(
  client: DynamoDBClient,
  tableName: string,
  indexName: string,
  reason: string,
  nowSeconds: number,
): Promise<AttributeValue[]> {
  const ids: AttributeValue[] = [];
  const pages = paginateQuery(
    { client },
    {
      TableName: tableName,
      IndexName: indexName,
      KeyConditionExpression: '#reason = :reason',
      FilterExpression: 'attribute_exists(#expiresAt) AND #expiresAt > :now',
      ProjectionExpression: 'id',
      ExpressionAttributeNames: { '#reason': UNRESOLVED_ATTRIBUTE, '#expiresAt': EXPIRES_AT_ATTRIBUTE },
      ExpressionAttributeValues: { ':reason': { S: reason }, ':now': { N: String(nowSeconds) } },
    },
  );
  for await (const page of pages) {
    for (const item of page.Items ?? []) if (item.id) ids.push(item.id);
  }
  return ids;
}

async function removeExpiry(
  client: DynamoDBClient,
  tableName: string,
  id: AttributeValue,
  reason: string,
  nowSeconds: number,
): Promise<boolean> {
  try {
    await client.send(
      new UpdateItemCommand({
        TableName: tableName,
        Key: { id },
        UpdateExpression: 'REMOVE #expiresAt',
        ConditionExpression: '#reason = :reason AND #expiresAt > :now',
        ExpressionAttributeNames: { '#reason': UNRESOLVED_ATTRIBUTE, '#expiresAt': EXPIRES_AT_ATTRIBUTE },
        ExpressionAttributeValues: { ':reason': { S: reason }, ':now': { N: String(nowSeconds) } },
      }),
    );
    return true;
  } catch (error) {
    // Resolved or expired since the query: nothing to keep. An applied removal whose answer was lost
    // and retried by the SDK lands here too (no expiry left): it was kept, but is not counted.
    if (error instanceof ConditionalCheckFailedException) return false;
    throw error;
  }
}
