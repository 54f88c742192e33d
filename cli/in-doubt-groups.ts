import type { DynamoDBDocumentClient } from '@aws-sdk/lib-dynamodb';
import { readRecordsByKey } from './record-batches.js';

/**
 * The group of each record's kept message, by record id (absent: none kept). Read from the table,
 * as the unresolved index projects no message: `oncely in-doubt list` pays for the bodies of the
 * records it shows only, in batches of 100, never the monitor.
 */
export async function keptGroups(
  documents: DynamoDBDocumentClient,
  tableName: string,
  ids: readonly string[],
): Promise<Map<string, string>> {
  const groups = new Map<string, string>();
  const items = await readRecordsByKey(documents, tableName, ids, {
    expression: 'id, #message.groupId',
    names: { '#message': 'message' },
  });
  for (const item of items) {
    const groupId = (item.message as { groupId?: unknown } | undefined)?.groupId;
    if (typeof groupId === 'string') groups.set(String(item.id), groupId);
  }
  return groups;
}
