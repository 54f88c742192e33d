import { type AttributeValue, type DynamoDBClient, QueryCommand } from '@aws-sdk/client-dynamodb';
import { DeleteMessageBatchCommand, ReceiveMessageCommand, type SQSClient } from '@aws-sdk/client-sqs';
import { BatchGetCommand, DynamoDBDocumentClient } from '@aws-sdk/lib-dynamodb';
import { messagesInQueue } from '../lambdas/common/queue-depth.js';
import {
  OUTBOX_ATTRIBUTES as A,
  groupPartition,
  itemKey,
  type OutboxLayout,
} from '../lambdas/outbox/layout.js';
import { type OutboxItem, toItem } from '../lambdas/outbox/outbox-items.js';

/** Receives at most, before the queue counts as one that does not empty. */
const MAX_RECEIVES = 500;

/** Where a schedule left its messages, read directly, without faults. */
export interface OutboxOutcome {
  /** Every copy the queue handed out, in its order. */
  received: { key: string; groupId: string }[];
  /** Key → its outbox item, for the messages whose item exists. */
  items: Map<string, OutboxItem>;
  /** Pending markers still in the table. */
  leftMarkers: LeftMarker[];
  /** Business key → its item, for those that exist. */
  business: Map<string, Record<string, unknown>>;
}

export async function observeOutbox(
  clients: { dynamodb: DynamoDBClient; sqs: SQSClient },
  layout: OutboxLayout,
  queueUrl: string,
  run: { keys: string[]; groups: string[]; businessKeys: string[] },
): Promise<OutboxOutcome> {
  const documents = DynamoDBDocumentClient.from(clients.dynamodb);
  const read = async (keys: Record<string, string>[]) => {
    const found: Record<string, unknown>[] = [];
    for (let i = 0; i < keys.length; i += 100) {
      const { Responses } = await documents.send(
        new BatchGetCommand({
          RequestItems: { [layout.tableName]: { Keys: keys.slice(i, i + 100), ConsistentRead: true } },
        }),
      );
      found.push(...(Responses?.[layout.tableName] ?? []));
    }
    return found;
  };
  const items = new Map(
    (await read(run.keys.map((key) => itemKey(layout, key)))).map((item) => [
      String(item[A.key]),
      toItem(item),
    ]),
  );
  const business = new Map(
    (
      await read(run.businessKeys.map((key) => ({ [layout.partitionKey]: key, [layout.sortKey]: 'order' })))
    ).map((item) => [String(item[layout.partitionKey]), item]),
  );
  return {
    received: await receiveAll(clients.sqs, queueUrl),
    items,
    leftMarkers: await markersLeft(clients.dynamodb, layout, run.groups),
    business,
  };
}

/** A pending marker: its message's key, in the partition of its group, sorted by its order. */
export interface LeftMarker {
  key: string;
  groupId: string;
  order: string;
}

/** The pending markers left in these groups' partitions. */
export async function markersLeft(
  client: DynamoDBClient,
  layout: OutboxLayout,
  groups: readonly string[],
): Promise<LeftMarker[]> {
  const left: LeftMarker[] = [];
  for (const group of groups) {
    for (const image of await groupMarkerImages(client, layout, group)) {
      left.push({ key: String(image[A.key]?.S), groupId: group, order: String(image[layout.sortKey]?.S) });
    }
  }
  return left;
}

/** The pending markers in a group's partition as stored (a strongly consistent read, without faults). */
export async function groupMarkerImages(
  client: DynamoDBClient,
  layout: OutboxLayout,
  group: string,
): Promise<Record<string, AttributeValue>[]> {
  const { Items = [] } = await client.send(
    new QueryCommand({
      TableName: layout.tableName,
      KeyConditionExpression: '#pk = :group',
      ExpressionAttributeNames: { '#pk': layout.partitionKey },
      ExpressionAttributeValues: { ':group': { S: groupPartition(group) } },
      ConsistentRead: true,
    }),
  );
  return Items;
}

/** Receives and deletes until the queue is empty: a FIFO queue hands out a group's next only once its head is gone. */
async function receiveAll(sqs: SQSClient, queueUrl: string): Promise<OutboxOutcome['received']> {
  const received: OutboxOutcome['received'] = [];
  for (let round = 0; round < MAX_RECEIVES; round++) {
    const { Messages = [] } = await sqs.send(
      new ReceiveMessageCommand({ QueueUrl: queueUrl, MaxNumberOfMessages: 10, WaitTimeSeconds: 0 }),
    );
    if (Messages.length === 0) {
      if ((await messagesInQueue(sqs, queueUrl)) === 0) return received;
      continue;
    }
    for (const message of Messages) {
      const envelope = JSON.parse(message.Body ?? '{}') as { key?: string; groupId?: string };
      received.push({ key: String(envelope.key), groupId: String(envelope.groupId) });
    }
    await sqs.send(
      new DeleteMessageBatchCommand({
        QueueUrl: queueUrl,
        Entries: Messages.map((message, index) => ({
          Id: String(index),
          ReceiptHandle: message.ReceiptHandle,
        })),
      }),
    );
  }
  throw new Error(`the queue ${queueUrl} did not empty in ${MAX_RECEIVES} receives`);
}
