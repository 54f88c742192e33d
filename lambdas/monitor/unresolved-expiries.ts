import {
  type AttributeValue,
  ConditionalCheckFailedException,
  type DynamoDBClient,
  UpdateItemCommand,
} from '@aws-sdk/client-dynamodb';
import { EXPIRES_AT_ATTRIBUTE, UNRESOLVED_ATTRIBUTE } from '../idempotency/record.js';
import type { UnresolvedSurvey } from './unresolved-counts.js';

/**
 * Removes the expiry of the live unresolved records that still have one (`surveyUnresolved` found
 * them): records parked by a version that gave them a TTL (this one parks them without, DESIGN §3).
 * Unresolved, a record keeps a message acknowledged long ago; expired, both would be gone. Each
 * removal is conditioned on the record being still unresolved and still alive, so a record resolved
 * meanwhile (which has its own expiry again) or already expired (gone for everyone) is left as it
 * is. Returns how many it kept.
 */
export async function removeUnresolvedExpiries(
  client: DynamoDBClient,
  tableName: string,
  expiring: UnresolvedSurvey['expiring'],
  nowSeconds: number,
): Promise<number> {
  let kept = 0;
  for (const { id, reason } of expiring)
    if (await removeExpiry(client, tableName, id, reason, nowSeconds)) kept++;
  return kept;
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
