import { createHash } from 'node:crypto';

/**
 * Where the outbox keeps its items (DESIGN §9), in its own table or in the producer's: a key space
 * of its own, marked by prefixes, on any table whose partition and sort keys are strings.
 *
 * Two items per message:
 * - the **outbox item**, keyed by the message key: its envelope, status (`PENDING` → `SENT`),
 *   claim, attempts and last error. A second message with the same key is refused at write time.
 * - the **pending marker**, in its group's partition, sorted by the message's order: it exists only
 *   while the message is unsent, so "is an earlier message of this group unsent?" is one strongly
 *   consistent query of a partition that holds only unsent messages (a global index could lag), and
 *   the sparse index the sweeper queries holds only markers.
 */

/**
 * The table the outbox writes to and its key attributes. In `OutboxOptions` each is optional, read
 * from the environment `OncelyOutbox.grantWrite` sets (`OUTBOX_TABLE_NAME`, …) when left out.
 */
export interface OutboxLayout {
  /**
   * The table's name.
   * @default `OUTBOX_TABLE_NAME`
   */
  tableName: string;
  /**
   * The table's partition key (a string attribute).
   * @default `OUTBOX_PARTITION_KEY`, else 'pk'
   */
  partitionKey: string;
  /**
   * The table's sort key (a string attribute).
   * @default `OUTBOX_SORT_KEY`, else 'sk'
   */
  sortKey: string;
}

export const DEFAULT_PARTITION_KEY = 'pk';
export const DEFAULT_SORT_KEY = 'sk';

export type OutboxStatus = 'PENDING' | 'SENT';

/** Attributes of outbox items and pending markers. */
export const OUTBOX_ATTRIBUTES = {
  key: 'outboxKey',
  status: 'outboxStatus',
  groupId: 'groupId',
  type: 'messageType',
  body: 'body',
  /** On outbox items: when the write committed, by its producer's clock (before issue 40: its order time). */
  createdAt: 'createdAt',
  /** On outbox items: the message's place in its group (`orderKey`), its marker's sort key. */
  order: 'outboxOrder',
  /**
   * On pending markers: the sparse index's sort key, `pendingSinceKey` — the commit time by the
   * producer's own clock — which the sweeper, the stuck count, the oldest age and `oncely outbox
   * list` select by. The same attribute name as `order` because the index was created under it; a
   * marker written before issue 40 carries its order there, then also a time.
   */
  pendingSince: 'outboxOrder',
  claimOwner: 'claimOwner',
  claimExpiresAt: 'claimExpiresAt',
  attempts: 'sendAttempts',
  lastError: 'lastError',
  messageId: 'messageId',
  sentAt: 'sentAt',
  sentBy: 'sentBy',
  expiresAt: 'expiresAt',
  /** The `clientRequestToken` of the write that put the item: a retry of that write finds it. */
  writeToken: 'writeToken',
  /** On outbox items: the producer's trace context (DESIGN §6), sent with the message; absent without one. */
  traceContext: 'traceContext',
  /** On pending markers only: the sparse index's partition key. */
  pending: 'outboxPending',
} as const;

/** The sparse index of pending markers, oldest first: what the sweeper and `oncely outbox list` query. */
export const OUTBOX_PENDING_INDEX = 'oncely-outbox-pending';
/**
 * The pending index's partition-key value of markers written before it was sharded (DESIGN §9.1):
 * still read, never written. Every value of the index's key starts with it (the relay's filter).
 */
export const PENDING_PARTITION = 'PENDING';

/**
 * The most shards a producer spreads markers over, and the fixed space every reader reads
 * (DESIGN §9.1): `PENDING` and `PENDING#0` … `PENDING#31`, whatever `pendingShards` producers use, so
 * that changing it on a live table needs no migration. It may grow in a later version, never shrink.
 */
export const MAX_PENDING_SHARDS = 32;
/** Producers' default `pendingShards`: about 4,000 messages a second (DESIGN §9.1). */
export const DEFAULT_PENDING_SHARDS = 8;

/** Every value of the pending index's partition key a marker may carry: what readers query. */
export const PENDING_SHARD_VALUES: readonly string[] = [
  PENDING_PARTITION,
  ...Array.from({ length: MAX_PENDING_SHARDS }, (_, shard) => `${PENDING_PARTITION}#${shard}`),
];

/** How many values of the pending index's key a reader queries at once (the sweeper, `oncely outbox list`). */
export const PENDING_SHARDS_AT_ONCE = 10;

/**
 * The pending index's partition-key value of a marker of `groupId` among `shards` shards: the
 * first 4 bytes of the group id's SHA-256, big-endian, mod `shards`. A group's markers share one.
 */
export function pendingShardOf(groupId: string, shards: number): string {
  const hash = createHash('sha256').update(groupId, 'utf8').digest().readUInt32BE(0);
  return `${PENDING_PARTITION}#${hash % shards}`;
}

/** Whether a value of `outboxPending` is one a pending marker carries (sharded or not). */
export function isPendingValue(value: unknown): boolean {
  return (
    value === PENDING_PARTITION || (typeof value === 'string' && value.startsWith(`${PENDING_PARTITION}#`))
  );
}

const ITEM_PREFIX = 'oncely-outbox#';
const GROUP_PREFIX = 'oncely-outbox-group#';
const ITEM_SORT_KEY = 'oncely-outbox';

/**
 * The partition-key prefixes of the outbox's key space (items, then markers): the OncelyOutbox
 * construct restricts its grants to them (`dynamodb:LeadingKeys`), as the table may be yours.
 */
export const OUTBOX_KEY_PREFIXES = [ITEM_PREFIX, GROUP_PREFIX] as const;

/** The longest `lastError` an outbox item keeps, in UTF-16 code units (what `String.slice` counts). */
export const MAX_LAST_ERROR_LENGTH = 500;

/** How long a SENT item is kept (its TTL attribute `expiresAt`): long enough to look up what was sent. */
export const SENT_RETENTION_SECONDS = 7 * 24 * 3600;

export function itemKey(layout: OutboxLayout, messageKey: string): Record<string, string> {
  return { [layout.partitionKey]: ITEM_PREFIX + messageKey, [layout.sortKey]: ITEM_SORT_KEY };
}

export function markerKey(layout: OutboxLayout, groupId: string, order: string): Record<string, string> {
  return { [layout.partitionKey]: GROUP_PREFIX + groupId, [layout.sortKey]: order };
}

export function groupPartition(groupId: string): string {
  return GROUP_PREFIX + groupId;
}

/**
 * A message's place in its group (the marker's sort key): its write's sequence in the group, then its
 * position in the write, then its key. The sequence is the producer's clock, or one past its groups'
 * newest pending message when that is later (see `Outbox.write`): an order, not a time — nothing
 * reads a time from it. Fixed widths, so string order is the order, and orders written before issue
 * 40 (the same form, a time) compare with it.
 */
export function orderKey(sequence: number, position: number, messageKey: string): string {
  return `${numberKey(sequence)}#${String(position).padStart(3, '0')}#${messageKey}`;
}

/** A pending marker's index sort key: its write's commit time by the producer's clock, position, key. */
export function pendingSinceKey(committedAtMs: number, position: number, messageKey: string): string {
  return orderKey(committedAtMs, position, messageKey);
}

/** The sequence at the head of an order key. */
export function sequenceOf(order: string): number {
  return Number(order.slice(0, order.indexOf('#')));
}

/** The commit time at the head of a `pendingSinceKey` (a marker's `pendingSince`). */
export function committedAtOf(pendingSince: string): number {
  return sequenceOf(pendingSince);
}

/** The `pendingSinceKey` every message committed before `ms` sorts under. */
export function pendingSinceBefore(ms: number): string {
  return `${numberKey(ms)}#`;
}

function numberKey(value: number): string {
  return String(value).padStart(15, '0');
}

/** A message waiting in its group, as `drainGroup` reads it from the group's partition. */
export interface PendingMessage {
  key: string;
  groupId: string;
  /** Its `orderKey`. */
  order: string;
}

/** A pending marker as the sparse index lists it. */
export interface IndexedMarker {
  key: string;
  groupId: string;
  /** Its `pendingSinceKey`. */
  pendingSince: string;
}
