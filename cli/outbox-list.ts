import type { DynamoDBClient } from '@aws-sdk/client-dynamodb';
import { DynamoDBDocumentClient, GetCommand, QueryCommand } from '@aws-sdk/lib-dynamodb';
import { forEachAtOnce } from '../lambdas/outbox/at-once.js';
import {
  OUTBOX_ATTRIBUTES as A,
  committedAtOf,
  itemKey,
  OUTBOX_PENDING_INDEX,
  PENDING_SHARD_VALUES,
  PENDING_SHARDS_AT_ONCE,
  pendingSinceBefore,
} from '../lambdas/outbox/layout.js';
import type { OutboxResources } from '../lib/constructs/outbox-outputs.js';

/** A message waiting in the outbox, as `oncely outbox list` shows it. */
export interface PendingOutboxMessage {
  key: string;
  groupId: string;
  /** Its type; absent when its outbox item could not be found. */
  type?: string;
  /** ISO time it was written, by the producer's clock. */
  createdAt: string;
  ageSeconds: number;
  /** Sends that failed so far. */
  attempts: number;
  /** Why the last send failed. */
  lastError?: string;
  /** Who is sending it, until when; `expired` when that sender is gone and anyone may take it. */
  claim?: { owner: string; expiresAt: string; expired: boolean };
}

export interface OutboxListing {
  tableName: string;
  /** Only messages pending longer than this were listed; absent: every pending message. */
  olderThanSeconds?: number;
  /** Oldest first, across groups. */
  messages: PendingOutboxMessage[];
  /** More messages are pending than the listing shows: it shows the oldest. */
  truncated: boolean;
}

/** A listing is for a person to read: beyond this many, the oldest tell what is wrong. The default limit. */
export const MAX_LISTED_MESSAGES = 1_000;
/** Items read at once: a listing should not crowd out the relay and the sweeper. */
const READS_AT_ONCE = 10;
/** What the listing reads of an outbox item. */
const ITEM_FIELDS = {
  '#status': A.status,
  '#type': A.type,
  '#attempts': A.attempts,
  '#lastError': A.lastError,
  '#owner': A.claimOwner,
  '#claimExpiresAt': A.claimExpiresAt,
};

/**
 * The outbox's pending messages, oldest first: from the sparse index of pending markers (one
 * query, no scan), then each one's outbox item (strongly consistent) for its type, attempts, last
 * error and claim. A message sent between the two reads is left out.
 */
export async function listPendingOutbox(
  dynamodb: DynamoDBClient,
  outbox: OutboxResources,
  options: { olderThanSeconds?: number; limit?: number; now?: () => number } = {},
): Promise<OutboxListing> {
  const documents = DynamoDBDocumentClient.from(dynamodb);
  const nowMs = (options.now ?? Date.now)();
  const { olderThanSeconds, limit = MAX_LISTED_MESSAGES } = options;
  const markers = await pendingMarkers(documents, outbox.tableName, { olderThanSeconds, limit, nowMs });
  const truncated = markers.length > limit;
  const listed = markers.slice(0, limit);
  const messages: (PendingOutboxMessage | undefined)[] = new Array(listed.length);
  await forEachAtOnce([...listed.entries()], READS_AT_ONCE, async ([index, marker]) => {
    const { Item } = await documents.send(
      new GetCommand({
        TableName: outbox.tableName,
        Key: itemKey(outbox, marker.key),
        ConsistentRead: true,
        // Not the body, which may be large.
        ProjectionExpression: Object.keys(ITEM_FIELDS).join(', '),
        ExpressionAttributeNames: ITEM_FIELDS,
      }),
    );
    if (Item?.[A.status] === 'SENT') return;
    messages[index] = toMessage(marker, Item, nowMs);
  });
  return {
    tableName: outbox.tableName,
    ...(olderThanSeconds === undefined ? {} : { olderThanSeconds }),
    messages: messages.filter((message) => message !== undefined),
    truncated,
  };
}

interface Marker {
  key: string;
  groupId: string;
  /** When its write committed, by its producer's clock: what its age is counted from. */
  pendingSince: string;
}

/**
 * Up to one more marker than is listed, so that the listing knows when there are more: the oldest
 * `limit + 1` of every shard of the index (DESIGN §9.1), merged by commit time. The outbox's oldest are
 * among each shard's oldest, so no shard needs reading further.
 */
async function pendingMarkers(
  documents: DynamoDBDocumentClient,
  tableName: string,
  { olderThanSeconds, limit, nowMs }: { olderThanSeconds?: number; limit: number; nowMs: number },
): Promise<Marker[]> {
  const found: Marker[] = [];
  await forEachAtOnce(PENDING_SHARD_VALUES, PENDING_SHARDS_AT_ONCE, async (shard) => {
    found.push(...(await shardMarkers(documents, tableName, shard, { olderThanSeconds, limit, nowMs })));
  });
  return found
    .sort((a, b) => (a.pendingSince < b.pendingSince ? -1 : a.pendingSince > b.pendingSince ? 1 : 0))
    .slice(0, limit + 1);
}

/** The oldest `limit + 1` markers of one shard. */
async function shardMarkers(
  documents: DynamoDBDocumentClient,
  tableName: string,
  shard: string,
  { olderThanSeconds, limit, nowMs }: { olderThanSeconds?: number; limit: number; nowMs: number },
): Promise<Marker[]> {
  const found: Marker[] = [];
  let startKey: Record<string, unknown> | undefined;
  do {
    const page = await documents.send(
      new QueryCommand({
        TableName: tableName,
        IndexName: OUTBOX_PENDING_INDEX,
        KeyConditionExpression:
          olderThanSeconds === undefined ? '#pending = :pending' : '#pending = :pending AND #since < :before',
        ExpressionAttributeNames: {
          '#pending': A.pending,
          ...(olderThanSeconds === undefined ? {} : { '#since': A.pendingSince }),
        },
        ExpressionAttributeValues: {
          ':pending': shard,
          ...(olderThanSeconds === undefined
            ? {}
            : { ':before': pendingSinceBefore(nowMs - olderThanSeconds * 1000) }),
        },
        Limit: limit + 1 - found.length,
        ExclusiveStartKey: startKey,
      }),
    );
    for (const item of page.Items ?? []) {
      found.push({
        key: String(item[A.key]),
        groupId: String(item[A.groupId]),
        pendingSince: String(item[A.pendingSince]),
      });
    }
    startKey = page.LastEvaluatedKey;
  } while (startKey && found.length <= limit);
  return found;
}

function toMessage(
  marker: Marker,
  item: Record<string, unknown> | undefined,
  nowMs: number,
): PendingOutboxMessage {
  const createdAtMs = committedAtOf(marker.pendingSince);
  const owner = item?.[A.claimOwner];
  const claimExpiresAt = Number(item?.[A.claimExpiresAt]);
  const type = item?.[A.type];
  const lastError = item?.[A.lastError];
  return {
    key: marker.key,
    groupId: marker.groupId,
    ...(typeof type === 'string' ? { type } : {}),
    createdAt: new Date(createdAtMs).toISOString(),
    ageSeconds: Math.max(0, Math.floor((nowMs - createdAtMs) / 1000)),
    attempts: Number(item?.[A.attempts] ?? 0),
    ...(typeof lastError === 'string' ? { lastError } : {}),
    ...(typeof owner === 'string' && Number.isFinite(claimExpiresAt)
      ? {
          claim: {
            owner,
            expiresAt: new Date(claimExpiresAt).toISOString(),
            expired: claimExpiresAt <= nowMs,
          },
        }
      : {}),
  };
}
