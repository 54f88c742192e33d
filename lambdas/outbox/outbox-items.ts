import { randomUUID } from 'node:crypto';
import {
  ConditionalCheckFailedException,
  type DynamoDBClient,
  TransactionCanceledException,
} from '@aws-sdk/client-dynamodb';
import {
  DynamoDBDocumentClient,
  QueryCommand,
  TransactWriteCommand,
  UpdateCommand,
} from '@aws-sdk/lib-dynamodb';
import { unmarshall } from '@aws-sdk/util-dynamodb';
import type { TraceContext } from '../common/trace-context.js';
import { forEachAtOnce } from './at-once.js';
import {
  OUTBOX_ATTRIBUTES as A,
  groupPartition,
  type IndexedMarker,
  itemKey,
  MAX_LAST_ERROR_LENGTH,
  markerKey,
  OUTBOX_PENDING_INDEX,
  type OutboxLayout,
  PENDING_SHARD_VALUES,
  PENDING_SHARDS_AT_ONCE,
  type PendingMessage,
  pendingSinceBefore,
  SENT_RETENTION_SECONDS,
} from './layout.js';
import { retryThrottled } from './throttling.js';

/** An outbox item as the relay and sweeper read it. */
export interface OutboxItem {
  key: string;
  groupId: string;
  status: 'PENDING' | 'SENT';
  body: string;
  order: string;
  createdAt: number;
  attempts?: number;
  lastError?: string;
  claimOwner?: string;
  claimExpiresAt?: number;
  messageId?: string;
  /** The producer's trace context, sent with the message (DESIGN §6). */
  traceContext?: TraceContext;
}

/** What a sweep's listing found below its bound. */
export interface PendingGroups {
  /** Each group with a pending marker below the bound, once, in the order of its oldest one. */
  groupIds: string[];
  /** Pending markers read below the bound. */
  markers: number;
}

/** A claimed item SQS accepted, with the id SQS gave it. */
export interface SentItem {
  item: OutboxItem;
  messageId: string;
}

/** What a claim came to: the item, now ours; or why not. */
export type ClaimResult =
  | { claimed: true; item: OutboxItem }
  | { claimed: false; reason: 'held' | 'sent' | 'missing'; item?: OutboxItem };

const NAMES = {
  '#status': A.status,
  '#owner': A.claimOwner,
  '#claimExpiresAt': A.claimExpiresAt,
};

/**
 * The requests the relay and the sweeper make on outbox items: claim (a conditional update, never
 * a lock), release, mark sent, and the strongly consistent list of a group's pending messages.
 */
export class OutboxItems {
  readonly layout: OutboxLayout;
  readonly now: () => number;
  readonly #documents: DynamoDBDocumentClient;
  readonly #listingPage: number | undefined;

  /** `listingPage`: markers per page of a shard's turn in the sweeper's listing (DynamoDB's 1 MB page; less in tests). */
  constructor(options: {
    client: DynamoDBClient;
    layout: OutboxLayout;
    now?: () => number;
    listingPage?: number;
  }) {
    this.layout = options.layout;
    this.now = options.now ?? Date.now;
    this.#listingPage = options.listingPage;
    this.#documents = DynamoDBDocumentClient.from(options.client, {
      marshallOptions: { removeUndefinedValues: true },
    });
  }

  /**
   * Claims a pending item for `owner` until `leaseMs` from now, unless someone else holds a live
   * claim. A retry of a claim whose answer was lost finds its own owner and succeeds again.
   */
  async claim(key: string, owner: string, leaseMs: number): Promise<ClaimResult> {
    const now = this.now();
    try {
      const { Attributes } = await this.#documents.send(
        new UpdateCommand({
          TableName: this.layout.tableName,
          Key: itemKey(this.layout, key),
          UpdateExpression: 'SET #owner = :owner, #claimExpiresAt = :expires',
          ConditionExpression:
            '#status = :pending AND (attribute_not_exists(#owner) OR #claimExpiresAt <= :now OR #owner = :owner)',
          ExpressionAttributeNames: NAMES,
          ExpressionAttributeValues: {
            ':owner': owner,
            ':expires': now + leaseMs,
            ':now': now,
            ':pending': 'PENDING',
          },
          ReturnValues: 'ALL_NEW',
          ReturnValuesOnConditionCheckFailure: 'ALL_OLD',
        }),
      );
      return { claimed: true, item: toItem(Attributes as Record<string, unknown>) };
    } catch (error) {
      if (!(error instanceof ConditionalCheckFailedException)) throw error;
      // The document client leaves the item in the error marshalled.
      if (!error.Item) return { claimed: false, reason: 'missing' };
      const item = toItem(unmarshall(error.Item));
      return { claimed: false, reason: item.status === 'SENT' ? 'sent' : 'held', item };
    }
  }

  /** Gives a claim back, noting why the item was not sent. A claim already lost is left alone. */
  async release(key: string, owner: string, lastError?: string): Promise<void> {
    const noted = lastError ? ' SET #lastError = :lastError ADD #attempts :one' : '';
    try {
      await this.#documents.send(
        new UpdateCommand({
          TableName: this.layout.tableName,
          Key: itemKey(this.layout, key),
          UpdateExpression: `REMOVE #owner, #claimExpiresAt${noted}`,
          ConditionExpression: '#owner = :owner',
          ExpressionAttributeNames: {
            '#owner': A.claimOwner,
            '#claimExpiresAt': A.claimExpiresAt,
            ...(lastError ? { '#lastError': A.lastError, '#attempts': A.attempts } : {}),
          },
          ExpressionAttributeValues: {
            ':owner': owner,
            ...(lastError ? { ':lastError': lastError.slice(0, MAX_LAST_ERROR_LENGTH), ':one': 1 } : {}),
          },
        }),
      );
    } catch (error) {
      if (!(error instanceof ConditionalCheckFailedException)) throw error;
    }
  }

  /**
   * Marks a run of claimed, sent items SENT and deletes their pending markers, all in one
   * transaction: one round trip for the run instead of one per message (a retry after a lost answer
   * is the same transaction: the SDK reuses its token). When the claim of one of them was lost, the
   * run before it is marked in a transaction of its own. Resolves to how many of the run's leading
   * items are now marked: all of them, or those before the first whose claim was lost. Each item is
   * two of the transaction's items (its update, its marker's delete): a run holds at most 50.
   */
  async markSent(run: readonly SentItem[], owner: string, sentBy: string): Promise<number> {
    let leading = run;
    while (leading.length > 0) {
      const lostAt = await this.#markRun(leading, owner, sentBy);
      if (lostAt === undefined) break;
      leading = leading.slice(0, lostAt);
    }
    return leading.length;
  }

  /** One transaction of SENT marks; the index of the first item whose claim was lost, if it was canceled for that. */
  async #markRun(run: readonly SentItem[], owner: string, sentBy: string): Promise<number | undefined> {
    const now = this.now();
    try {
      // Sent again while DynamoDB cancels it for throttling (the index's shard is busy), each time
      // under a token of its own: a canceled transaction wrote nothing, and the marks are fenced on
      // the claims anyway. The SDK's own retries of one send keep its token.
      await retryThrottled(() =>
        this.#documents.send(
          new TransactWriteCommand({
            ClientRequestToken: randomUUID(),
            TransactItems: run.flatMap(({ item, messageId }) => [
              {
                Update: {
                  TableName: this.layout.tableName,
                  Key: itemKey(this.layout, item.key),
                  UpdateExpression:
                    'SET #status = :sent, #messageId = :messageId, #sentAt = :now, #sentBy = :sentBy, ' +
                    '#expiresAt = :expiresAt REMOVE #owner, #claimExpiresAt ADD #attempts :one',
                  ConditionExpression: '#status = :pending AND #owner = :owner',
                  ExpressionAttributeNames: {
                    ...NAMES,
                    '#messageId': A.messageId,
                    '#sentAt': A.sentAt,
                    '#sentBy': A.sentBy,
                    '#expiresAt': A.expiresAt,
                    '#attempts': A.attempts,
                  },
                  ExpressionAttributeValues: {
                    ':sent': 'SENT',
                    ':pending': 'PENDING',
                    ':owner': owner,
                    ':messageId': messageId,
                    ':sentBy': sentBy,
                    ':now': now,
                    ':expiresAt': Math.floor(now / 1000) + SENT_RETENTION_SECONDS,
                    ':one': 1,
                  },
                },
              },
              {
                Delete: {
                  TableName: this.layout.tableName,
                  Key: markerKey(this.layout, item.groupId, item.order),
                },
              },
            ]),
          }),
        ),
      );
      return undefined;
    } catch (error) {
      // Reasons follow TransactItems: the item's conditioned update at 2i, its marker's delete at 2i + 1.
      const reasons = error instanceof TransactionCanceledException ? (error.CancellationReasons ?? []) : [];
      const lost = reasons.findIndex((reason) => reason.Code === 'ConditionalCheckFailed');
      if (lost !== -1) return Math.floor(lost / 2);
      throw error;
    }
  }

  /** The first `limit` pending messages of a group, in order, read strongly consistently. */
  async pendingOfGroup(groupId: string, limit: number): Promise<PendingMessage[]> {
    const { Items = [] } = await this.#documents.send(
      new QueryCommand({
        TableName: this.layout.tableName,
        KeyConditionExpression: '#pk = :group',
        ExpressionAttributeNames: { '#pk': this.layout.partitionKey },
        ExpressionAttributeValues: { ':group': groupPartition(groupId) },
        ConsistentRead: true,
        Limit: limit,
      }),
    );
    // The order is the marker's sort key (its `pendingSince` attribute is the commit time).
    return Items.map((item) => ({
      key: String(item[A.key]),
      groupId: String(item[A.groupId]),
      order: String(item[this.layout.sortKey]),
    }));
  }

  /** The oldest message pending since before `beforeMs`, from the sparse index: the oldest of every shard's first. */
  async oldestPendingBefore(beforeMs: number): Promise<IndexedMarker | undefined> {
    const firsts: IndexedMarker[] = [];
    await forEachAtOnce(PENDING_SHARD_VALUES, PENDING_SHARDS_AT_ONCE, async (shard) => {
      const { Items = [] } = await this.#documents.send(
        new QueryCommand({ ...this.#pendingQuery(shard, beforeMs), Limit: 1 }),
      );
      firsts.push(...Items.map(toIndexed));
    });
    return firsts.sort((a, b) => compare(a.pendingSince, b.pendingSince))[0];
  }

  /**
   * Each group with a message pending since before `beforeMs` (committed then, by its producer's
   * clock), once, in the order of its oldest such message: every shard of the index is paged through to its end below the bound, while
   * `keepListing()` allows, reading only the group ids and orders. The shards take turns, a page
   * each (DESIGN §9.1): a shard with a long backlog does not hold up the groups of the others. A
   * query cannot skip a group's further markers, so a group with many never hides the groups behind
   * it in its shard, as a bound on the markers read would.
   */
  async pendingGroupsBefore(beforeMs: number, keepListing: () => boolean): Promise<PendingGroups> {
    const oldest = new Map<string, string>();
    let markers = 0;
    let shards = PENDING_SHARD_VALUES.map((shard) => ({
      shard,
      startKey: undefined as StartKey,
      done: false,
    }));
    do {
      await forEachAtOnce(shards, PENDING_SHARDS_AT_ONCE, async (cursor) => {
        const page = await this.#documents.send(
          new QueryCommand({
            ...this.#pendingQuery(cursor.shard, beforeMs, { '#group': A.groupId }),
            ProjectionExpression: '#group, #since',
            // A round reads a page of every shard at once: a shard's long backlog takes a page per
            // round like any other, so no page limit is needed for fairness (DynamoDB's is 1 MB).
            Limit: this.#listingPage,
            ExclusiveStartKey: cursor.startKey,
          }),
        );
        for (const item of page.Items ?? []) {
          const groupId = String(item[A.groupId]);
          const since = String(item[A.pendingSince]);
          const known = oldest.get(groupId);
          if (known === undefined || since < known) oldest.set(groupId, since);
        }
        markers += page.Count ?? 0;
        cursor.startKey = page.LastEvaluatedKey;
        cursor.done = !page.LastEvaluatedKey;
      });
      shards = shards.filter((cursor) => !cursor.done);
    } while (shards.length > 0 && keepListing());
    const groupIds = [...oldest.entries()].sort(([, a], [, b]) => compare(a, b)).map(([groupId]) => groupId);
    return { groupIds, markers };
  }

  /** How many messages committed before `beforeMs` are still pending (from the sparse index, every shard). */
  async countPendingBefore(beforeMs: number): Promise<number> {
    let count = 0;
    await forEachAtOnce(PENDING_SHARD_VALUES, PENDING_SHARDS_AT_ONCE, async (shard) => {
      let startKey: StartKey;
      do {
        const page = await this.#documents.send(
          new QueryCommand({
            ...this.#pendingQuery(shard, beforeMs),
            Select: 'COUNT',
            ExclusiveStartKey: startKey,
          }),
        );
        count += page.Count ?? 0;
        startKey = page.LastEvaluatedKey;
      } while (startKey);
    });
    return count;
  }

  #pendingQuery(shard: string, beforeMs: number, names: Record<string, string> = {}) {
    return {
      TableName: this.layout.tableName,
      IndexName: OUTBOX_PENDING_INDEX,
      KeyConditionExpression: '#pending = :pending AND #since < :before',
      ExpressionAttributeNames: { '#pending': A.pending, '#since': A.pendingSince, ...names },
      ExpressionAttributeValues: { ':pending': shard, ':before': pendingSinceBefore(beforeMs) },
    };
  }
}

type StartKey = Record<string, unknown> | undefined;

function compare(a: string, b: string): number {
  return a < b ? -1 : a > b ? 1 : 0;
}

function toIndexed(item: Record<string, unknown>): IndexedMarker {
  return {
    key: String(item[A.key]),
    groupId: String(item[A.groupId]),
    pendingSince: String(item[A.pendingSince]),
  };
}

export function toItem(item: Record<string, unknown>): OutboxItem {
  const optional = <T>(name: string) => (item[name] === undefined ? undefined : (item[name] as T));
  return {
    key: String(item[A.key]),
    groupId: String(item[A.groupId]),
    status: item[A.status] === 'SENT' ? 'SENT' : 'PENDING',
    body: String(item[A.body]),
    order: String(item[A.order]),
    createdAt: Number(item[A.createdAt]),
    attempts: optional<number>(A.attempts),
    lastError: optional<string>(A.lastError),
    claimOwner: optional<string>(A.claimOwner),
    claimExpiresAt: optional<number>(A.claimExpiresAt),
    messageId: optional<string>(A.messageId),
    traceContext: optional<TraceContext>(A.traceContext),
  };
}
