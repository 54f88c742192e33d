import { type DynamoDBDocumentClient, QueryCommand } from '@aws-sdk/lib-dynamodb';
import { groupPartition, type OutboxLayout, sequenceOf } from './layout.js';

/**
 * The sequence of the newest pending message of any of `groupIds`, 0 if none has one (DESIGN §9).
 * A write orders after it, so a message written after another committed follows it in its group
 * whatever the two producers' clocks say. One strongly consistent query per group, at once: a
 * marker committed before the call is seen.
 */
export async function newestPendingSequence(
  documents: DynamoDBDocumentClient,
  layout: OutboxLayout,
  groupIds: Iterable<string>,
): Promise<number> {
  const newest = await Promise.all(
    [...new Set(groupIds)].map(async (groupId) => {
      const { Items = [] } = await documents.send(
        new QueryCommand({
          TableName: layout.tableName,
          KeyConditionExpression: '#pk = :group',
          ExpressionAttributeNames: { '#pk': layout.partitionKey, '#sk': layout.sortKey },
          ExpressionAttributeValues: { ':group': groupPartition(groupId) },
          // Only the order is needed: the marker's sort key.
          ProjectionExpression: '#sk',
          ScanIndexForward: false,
          ConsistentRead: true,
          Limit: 1,
        }),
      );
      const [marker] = Items;
      return marker ? sequenceOf(String(marker[layout.sortKey])) : 0;
    }),
  );
  return Math.max(0, ...newest);
}
