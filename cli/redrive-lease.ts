import { randomUUID } from 'node:crypto';
import { hostname } from 'node:os';
import {
  ConditionalCheckFailedException,
  DeleteItemCommand,
  type DynamoDBClient,
  GetItemCommand,
  PutItemCommand,
} from '@aws-sdk/client-dynamodb';
import { RedriveInProgressError } from './operations-errors.js';

/** The idempotency table item a running `dlq redrive` holds. */
export const REDRIVE_LEASE_ID = 'oncely/dlq-redrive';
/** Beyond the redrive's own bound: its last batch's visibility timeout, and clock skew between operators. */
const LEASE_MARGIN_MS = 2 * 60_000;
/** A write whose answer was lost is tried again: the condition lets the same owner take its own lease. */
const ACQUIRE_ATTEMPTS = 3;

export interface RedriveLease {
  owner: string;
  release(): Promise<void>;
}

/**
 * Takes the DLQ's redrive lease in the idempotency table, or refuses with RedriveInProgressError
 * naming who holds it and until when. Two redrives at once would each hold messages the other then
 * counts as hidden, and redrive each other's returned failures; one at a time is what an operator
 * means. The lease lasts the redrive's bound plus a margin, so a killed run blocks the next one for
 * that long at most; a run that ends gives it back.
 */
export async function acquireRedriveLease(
  dynamodb: DynamoDBClient,
  tableName: string,
  durationMs: number,
): Promise<RedriveLease> {
  const owner = `${hostname()}:${process.pid}:${randomUUID()}`;
  const until = Date.now() + durationMs + LEASE_MARGIN_MS;
  for (let attempt = 1; ; attempt++) {
    try {
      await dynamodb.send(
        new PutItemCommand({
          TableName: tableName,
          Item: {
            id: { S: REDRIVE_LEASE_ID },
            owner: { S: owner },
            startedAt: { S: new Date().toISOString() },
            leaseUntil: { N: String(until) },
            // The table's TTL removes a lease left behind, a day after it ran out.
            expiresAt: { N: String(Math.ceil(until / 1000) + 86_400) },
          },
          ConditionExpression: 'attribute_not_exists(id) OR leaseUntil < :now OR #owner = :owner',
          ExpressionAttributeNames: { '#owner': 'owner' },
          ExpressionAttributeValues: { ':now': { N: String(Date.now()) }, ':owner': { S: owner } },
        }),
      );
      return { owner, release: () => release(dynamodb, tableName, owner) };
    } catch (error) {
      if (error instanceof ConditionalCheckFailedException) throw await inProgress(dynamodb, tableName);
      if (attempt >= ACQUIRE_ATTEMPTS) throw error;
    }
  }
}

async function inProgress(dynamodb: DynamoDBClient, tableName: string): Promise<RedriveInProgressError> {
  const { Item } = await dynamodb.send(
    new GetItemCommand({ TableName: tableName, Key: { id: { S: REDRIVE_LEASE_ID } }, ConsistentRead: true }),
  );
  const until = new Date(Number(Item?.leaseUntil?.N ?? 0)).toISOString();
  return new RedriveInProgressError(
    `Another \`oncely dlq redrive\` is running (${Item?.owner?.S}, since ${Item?.startedAt?.S}): two at once would ` +
      `hide messages from each other. Wait for it to end; if it was killed, its lease runs out at ${until}. ` +
      `Sure that it no longer runs? Delete the item "${REDRIVE_LEASE_ID}" from the table ${tableName} to go on now.`,
  );
}

/** Gives the lease back if it is still ours; if that fails, it runs out by itself. */
async function release(dynamodb: DynamoDBClient, tableName: string, owner: string): Promise<void> {
  await dynamodb
    .send(
      new DeleteItemCommand({
        TableName: tableName,
        Key: { id: { S: REDRIVE_LEASE_ID } },
        ConditionExpression: '#owner = :owner',
        ExpressionAttributeNames: { '#owner': 'owner' },
        ExpressionAttributeValues: { ':owner': { S: owner } },
      }),
    )
    .catch(() => undefined);
}
