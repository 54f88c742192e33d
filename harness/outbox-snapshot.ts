import {
  type DynamoDBClient,
  GetItemCommand,
  paginateQuery,
  paginateScan,
  QueryCommand,
} from '@aws-sdk/client-dynamodb';
import { marshall, unmarshall } from '@aws-sdk/util-dynamodb';
import type { OutboxResources } from 'oncely/cdk';
import { OUTBOX_ATTRIBUTES as A, OUTBOX_PENDING_INDEX, PENDING_SHARD_VALUES } from 'oncely/internal';
import { orderKey, orderPlacedKey } from '../lambdas/shop/orders/place-order.js';

/** The outbox items' partition keys: `oncely-outbox#<message key>` (docs/outbox.md, "Where it keeps its items"). */
const ITEM_PREFIX = 'oncely-outbox#';

/** The outbox in the orders table, counted from its items: what was written, and who sent it. */
export interface OutboxSnapshot {
  /** Outbox items: one per message ever written. */
  written: number;
  /** SENT by the relay, on the table's stream. */
  relayed: number;
  /** SENT by the sweeper, on its schedule. */
  swept: number;
  /** Still PENDING. */
  pending: number;
  /** PENDING for longer than the outbox's stuck bound. */
  stuck: number;
  /** Each message key's status. */
  statuses: Map<string, string>;
}

/** Reads every outbox item of the table, strongly consistent: once, for the report. */
export async function readOutbox(dynamodb: DynamoDBClient, outbox: OutboxResources): Promise<OutboxSnapshot> {
  const snapshot: OutboxSnapshot = {
    written: 0,
    relayed: 0,
    swept: 0,
    pending: 0,
    stuck: 0,
    statuses: new Map(),
  };
  const stuckBefore = Date.now() - outbox.stuckAfterSeconds * 1000;
  const pages = paginateScan(
    { client: dynamodb },
    {
      TableName: outbox.tableName,
      ConsistentRead: true,
      FilterExpression: 'begins_with(#pk, :prefix)',
      ExpressionAttributeNames: { '#pk': outbox.partitionKey },
      ExpressionAttributeValues: { ':prefix': { S: ITEM_PREFIX } },
    },
  );
  for await (const page of pages) {
    for (const raw of page.Items ?? []) {
      const item = unmarshall(raw);
      const status = String(item[A.status]);
      snapshot.written++;
      snapshot.statuses.set(String(item[A.key]), status);
      if (status === 'SENT' && item[A.sentBy] === 'relay') snapshot.relayed++;
      if (status === 'SENT' && item[A.sentBy] === 'sweeper') snapshot.swept++;
      if (status === 'PENDING') {
        snapshot.pending++;
        if (Number(item[A.createdAt]) < stuckBefore) snapshot.stuck++;
      }
    }
  }
  return snapshot;
}

/**
 * How many messages wait in the outbox: a count of its sparse pending index, which holds a marker
 * per unsent message and nothing else, so it is cheap to ask often.
 */
export async function countPending(dynamodb: DynamoDBClient, outbox: OutboxResources): Promise<number> {
  let count = 0;
  // Every value of the index's key a marker may carry: `PENDING` and its shards (DESIGN §9.1).
  for (const shard of PENDING_SHARD_VALUES) {
    const pages = paginateQuery(
      { client: dynamodb },
      {
        TableName: outbox.tableName,
        IndexName: OUTBOX_PENDING_INDEX,
        KeyConditionExpression: '#pending = :pending',
        ExpressionAttributeNames: { '#pending': A.pending },
        ExpressionAttributeValues: { ':pending': { S: shard } },
        Select: 'COUNT',
      },
    );
    for await (const page of pages) count += page.Count ?? 0;
  }
  return count;
}

/**
 * An order's item and its OrderPlaced event's outbox item, as JSON text (strongly consistent): equal
 * text before and after a call means the call wrote nothing to either.
 */
export async function readPlacedOrder(
  dynamodb: DynamoDBClient,
  outbox: OutboxResources,
  orderId: string,
): Promise<string> {
  const [order, event] = await Promise.all([
    dynamodb.send(
      new GetItemCommand({
        TableName: outbox.tableName,
        Key: marshall(orderKey(orderId)),
        ConsistentRead: true,
      }),
    ),
    dynamodb.send(
      new QueryCommand({
        TableName: outbox.tableName,
        KeyConditionExpression: '#pk = :pk',
        ExpressionAttributeNames: { '#pk': outbox.partitionKey },
        ExpressionAttributeValues: { ':pk': { S: `${ITEM_PREFIX}${orderPlacedKey(orderId)}` } },
        ConsistentRead: true,
      }),
    ),
  ]);
  return JSON.stringify([order.Item, event.Items]);
}
