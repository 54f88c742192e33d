import { BatchGetCommand, type DynamoDBDocumentClient } from '@aws-sdk/lib-dynamodb';

/** BatchGetItem's most keys per request. */
const BATCH_GET_KEYS = 100;

/**
 * The group of each record's kept message, by record id (absent: none kept). Read from the table,
 * as the unresolved index projects no message: `oncely in-doubt list` pays for the bodies of the
 * records it shows only, in batches of 100, never the monitor. Keys DynamoDB leaves unprocessed
 * (throttling) are asked again until none is left.
 */
export async function keptGroups(
  documents: DynamoDBDocumentClient,
  tableName: string,
  ids: readonly string[],
): Promise<Map<string, string>> {
  const groups = new Map<string, string>();
  for (let start = 0; start < ids.length; start += BATCH_GET_KEYS) {
    let keys: Record<string, unknown>[] = ids.slice(start, start + BATCH_GET_KEYS).map((id) => ({ id }));
    while (keys.length > 0) {
      const { Responses, UnprocessedKeys } = await documents.send(
        new BatchGetCommand({
          RequestItems: {
            [tableName]: {
              Keys: keys,
              ProjectionExpression: 'id, #message.groupId',
              ExpressionAttributeNames: { '#message': 'message' },
            },
          },
        }),
      );
      for (const item of Responses?.[tableName] ?? []) {
        const groupId = (item.message as { groupId?: unknown } | undefined)?.groupId;
        if (typeof groupId === 'string') groups.set(String(item.id), groupId);
      }
      keys = UnprocessedKeys?.[tableName]?.Keys ?? [];
    }
  }
  return groups;
}
