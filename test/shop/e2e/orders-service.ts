import { GetItemCommand, QueryCommand } from '@aws-sdk/client-dynamodb';
import { InvokeCommand } from '@aws-sdk/client-lambda';
import { marshall, unmarshall } from '@aws-sdk/util-dynamodb';
import { OUTBOX_ATTRIBUTES } from '../../../lambdas/outbox/layout.js';
import { orderKey, type PlaceOrderRequest } from '../../../lambdas/shop/orders/place-order.js';
import type { E2eTarget } from './target.js';

/** PlaceOrder's answer as an API backend's caller gets it: its result, or Lambda's function error. */
export interface PlaceOrderAnswer {
  functionError?: string;
  payload: Record<string, unknown>;
}

/** Invokes the orders service's PlaceOrder function with one order. */
export async function placeOrder(target: E2eTarget, order: PlaceOrderRequest): Promise<PlaceOrderAnswer> {
  const output = await target.lambda.send(
    new InvokeCommand({
      FunctionName: target.orders.placeOrderFunctionName,
      Payload: new TextEncoder().encode(JSON.stringify(order)),
    }),
  );
  return {
    ...(output.FunctionError ? { functionError: output.FunctionError } : {}),
    payload: JSON.parse(new TextDecoder().decode(output.Payload)),
  };
}

/** The order's item in the orders table, strongly consistent; undefined if there is none. */
export async function readOrder(target: E2eTarget, orderId: string) {
  const { Item } = await target.dynamodb.send(
    new GetItemCommand({
      TableName: target.orders.tableName,
      Key: marshall(orderKey(orderId)),
      ConsistentRead: true,
    }),
  );
  return Item ? unmarshall(Item) : undefined;
}

/** The items of one partition of the orders table, strongly consistent. */
async function readPartition(target: E2eTarget, pk: string) {
  const { Items = [] } = await target.dynamodb.send(
    new QueryCommand({
      TableName: target.orders.tableName,
      KeyConditionExpression: 'pk = :pk',
      ExpressionAttributeValues: { ':pk': { S: pk } },
      ConsistentRead: true,
    }),
  );
  return Items.map((item) => unmarshall(item));
}

/**
 * The outbox's items for a message key, `oncely-outbox#<key>` (docs/outbox.md): one, whose
 * `outboxStatus` is SENT once the relay or the sweeper put the message on the queue.
 */
export const readOutboxItems = (target: E2eTarget, key: string) =>
  readPartition(target, `oncely-outbox#${key}`);

export const outboxStatus = async (target: E2eTarget, key: string) =>
  (await readOutboxItems(target, key))[0]?.[OUTBOX_ATTRIBUTES.status];

/** A group's pending markers, `oncely-outbox-group#<group>`: one per message not yet sent. */
export const readPendingMarkers = (target: E2eTarget, groupId: string) =>
  readPartition(target, `oncely-outbox-group#${groupId}`);
