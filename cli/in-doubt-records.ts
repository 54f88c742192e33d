import type { DynamoDBClient } from '@aws-sdk/client-dynamodb';
import type { SQSClient } from '@aws-sdk/client-sqs';
import type { StoredError } from '../lambdas/idempotency/index.js';
import {
  type IdempotencyRecord,
  isExpired,
  MAX_KEPT_MESSAGE_BYTES,
  UNRESOLVED_REASONS,
  type UnresolvedReason,
} from '../lambdas/idempotency/record.js';
import type { PipelineResources } from '../lib/constructs/pipeline-outputs.js';
import {
  DedupHorizonUnknownError,
  InvalidPageTokenError,
  MessageNotKeptError,
  RecordNotInDoubtError,
  ResolutionConflictError,
  UnknownRecordError,
} from './operations-errors.js';
import { DynamoDBOperatorRecords, type IndexPosition, type OperatorRecords } from './operator-records.js';

export { itemOf } from './operator-records.js';

/** A record an operator must resolve, as `oncely in-doubt list` shows it. */
export interface UnresolvedRecord {
  /** `namespace#key`: what `oncely in-doubt resolve` takes. */
  id: string;
  /** IN_DOUBT: decide whether the effect happened. RETRY_PENDING: a `--as retry` that did not finish. */
  status: UnresolvedReason;
  /** The error that made the effect doubtful. */
  reason?: StoredError;
  /** ISO time it entered this status. */
  since?: string;
  attempts?: number;
  /** The group its kept message goes back to; absent when the record kept no message (no retry then). */
  groupId?: string;
  /**
   * ISO time the record (and its kept message) expires. Absent for a record parked by this version:
   * it does not expire while unresolved. One parked by an older version has one until the monitor's
   * next run removes it; past it, the record is gone.
   */
  expiresAt?: string;
}

export type Resolution =
  | { id: string; as: 'completed' }
  /**
   * The message is back on the queue as `messageId`. `notCleared` says why the record could not be
   * taken off the list afterwards (it leaves the list once the consumer runs the message).
   */
  | {
      id: string;
      as: 'retry';
      groupId: string;
      messageId: string;
      /**
       * The record's state once the message was sent: FAILED (the consumer runs the message),
       * RETRY_PENDING (`notCleared`), or what someone else made it meanwhile: IN_PROGRESS or a later
       * state (the consumer got to it), COMPLETED (it ran, or was resolved `--as completed`: the copy
       * sent is a duplicate, never run).
       */
      status: string;
      notCleared?: string;
      /** `--republish`: the message was sent stamped with a fresh `publishedAt`. */
      republished?: true;
    };

/**
 * What in-doubt operations need: the idempotency table, the queue a retry goes to, and for a
 * pipeline whose lease records are in Valkey (`leaseRecords: 'valkey'`), that cache's records.
 */
export interface InDoubtTarget {
  dynamodb: DynamoDBClient;
  sqs: SQSClient;
  resources: Pick<PipelineResources, 'idempotencyTableName' | 'queueUrl' | 'idempotencyTtlSeconds'>;
  /** The lease records cache's records (DESIGN §3.1); absent: every record is in the table. */
  valkey?: OperatorRecords;
}

/** The stores the target's records are in: the table, then the cache if it has one. */
export function recordStores(target: InDoubtTarget): OperatorRecords[] {
  const table = new DynamoDBOperatorRecords(target.dynamodb, target.resources.idempotencyTableName);
  return target.valkey ? [table, target.valkey] : [table];
}

/**
 * The record `id` and the store that holds it, read (strongly consistent) in each store at once: a
 * record is in one of them (a namespace is a lease operation's, in the cache, or a transactional
 * one's, in the table); should both hold one, the one to resolve, else the live one.
 */
export async function locateRecord(
  target: InDoubtTarget,
  id: string,
  nowMs: number,
): Promise<{ store: OperatorRecords; record: IdempotencyRecord | undefined }> {
  const found = await Promise.all(
    recordStores(target).map(async (store) => ({ store, record: await store.read(id) })),
  );
  const state = (record: IdempotencyRecord | undefined) => stateOf(record, nowMs);
  return (
    found.find(({ record }) => state(record) === 'IN_DOUBT' || state(record) === 'RETRY_PENDING') ??
    found.find(({ record }) => state(record) !== 'gone') ??
    found[0]
  );
}

/** How many records `oncely in-doubt list` shows at once unless given `--limit`. */
export const DEFAULT_UNRESOLVED_LIMIT = 100;

/** One page of `oncely in-doubt list`: its `--json` document. */
export interface UnresolvedPage {
  /** At most the limit's records, oldest first. */
  records: UnresolvedRecord[];
  /**
   * Present when more records may follow: pass it back (`--after`) for the next page. It names where
   * each status's listing stopped, so records resolved meanwhile are skipped and none is shown twice.
   */
  next?: string;
}

export interface ListUnresolvedOptions {
  /** The most records to show (and to read the kept message's group of). Default {@link DEFAULT_UNRESOLVED_LIMIT}. */
  limit?: number;
  /** A page's `next`: list the records after the ones it showed. */
  after?: string;
}

/** Where each status's listing stopped in one store. */
type Positions = Partial<Record<UnresolvedReason, IndexPosition>>;
/** The table's positions at the top (as before the cache was read), the cache's under `valkey`. */
type PageToken = Positions & { valkey?: Positions };

/**
 * The records an operator must resolve, oldest first, `limit` at a time: those IN_DOUBT and those
 * whose retry did not finish. Queries the sparse index of unresolved records (never the whole table),
 * which projects no kept message, reading at most `limit` of each status; then reads the group of the
 * records it shows, and of no other, from the table (whole items: what the read costs, see
 * docs/operations.md).
 */
export async function listUnresolved(
  target: InDoubtTarget,
  options: ListUnresolvedOptions = {},
): Promise<UnresolvedPage> {
  const limit = options.limit ?? DEFAULT_UNRESOLVED_LIMIT;
  const after = options.after === undefined ? {} : decodePageToken(options.after);
  const nowMs = Date.now();
  const positionsOf = (token: PageToken, store: OperatorRecords): Positions =>
    (store.kind === 'valkey' ? token.valkey : token) ?? {};
  const stores = recordStores(target);
  const listings = await Promise.all(
    stores.flatMap((store) =>
      UNRESOLVED_REASONS.map(async (reason) => {
        const listed = await store.unresolved(reason, {
          limit,
          after: positionsOf(after, store)[reason],
          nowMs,
        });
        return { store, reason, more: listed.more, items: listed.items.map((item) => ({ store, item })) };
      }),
    ),
  );
  const shown = listings
    .flatMap((listing) => listing.items)
    .sort((a, b) => (a.item.updatedAt ?? 0) - (b.item.updatedAt ?? 0))
    .slice(0, limit);
  const { valkey: valkeyAfter, ...tableAfter } = after;
  const next: Positions = { ...tableAfter };
  const nextInCache: Positions = { ...valkeyAfter };
  for (const { store, item } of shown) {
    const positions = store.kind === 'valkey' ? nextInCache : next;
    positions[item.unresolved as UnresolvedReason] = {
      id: String(item.id),
      updatedAt: Number(item.updatedAt),
    };
  }
  const more = listings.some(
    (listing) => listing.more || listing.items.some((each) => !shown.includes(each)),
  );
  const groups = new Map<string, string>();
  for (const store of stores) {
    const ids = shown.filter((each) => each.store === store).map(({ item }) => String(item.id));
    // Each store is read only for the records it shows: none, no read.
    if (ids.length === 0) continue;
    for (const [id, group] of await store.keptGroups(ids)) groups.set(id, group);
  }
  const records = shown.map(({ item }) => ({
    id: String(item.id),
    status: item.unresolved as UnresolvedReason,
    reason: item.error,
    since: item.updatedAt ? new Date(item.updatedAt).toISOString() : undefined,
    attempts: item.attempts,
    groupId: groups.get(String(item.id)),
    ...(item.expiresAt === undefined ? {} : { expiresAt: new Date(item.expiresAt * 1000).toISOString() }),
  }));
  const token: PageToken = target.valkey || valkeyAfter ? { ...next, valkey: nextInCache } : next;
  return more ? { records, next: encodePageToken(token) } : { records };
}

function encodePageToken(token: PageToken): string {
  return Buffer.from(JSON.stringify(token)).toString('base64url');
}

function decodePageToken(text: string): PageToken {
  const invalid = () =>
    new InvalidPageTokenError(
      `--after "${text}" is not a page token: pass back the \`next\` a previous \`oncely in-doubt list\` printed, ` +
        'or leave --after out to start from the oldest record.',
    );
  let token: unknown;
  try {
    token = JSON.parse(Buffer.from(text, 'base64url').toString('utf8'));
  } catch {
    throw invalid();
  }
  const isObject = (value: unknown): value is Record<string, unknown> =>
    typeof value === 'object' && value !== null && !Array.isArray(value);
  const checkPositions = (positions: Record<string, unknown>) => {
    for (const [reason, position] of Object.entries(positions)) {
      const { id, updatedAt } = (position ?? {}) as Partial<IndexPosition>;
      const known = (UNRESOLVED_REASONS as readonly string[]).includes(reason);
      if (!known || typeof id !== 'string' || !Number.isFinite(updatedAt)) throw invalid();
    }
  };
  if (!isObject(token)) throw invalid();
  const { valkey, ...table } = token;
  checkPositions(table);
  if (valkey !== undefined) {
    if (!isObject(valkey)) throw invalid();
    checkPositions(valkey);
  }
  return token as PageToken;
}

/**
 * `--as completed`: the effect happened. The record becomes COMPLETED, so the message never runs
 * again (a redriven or re-sent copy counts as a duplicate), and lives a full TTL from now, as a
 * record completed now would. Works on an IN_DOUBT record and on one
 * pending a retry; the write is conditioned on the state it was read in, so a concurrent resolution
 * or the consumer running a re-sent message is reported, never overwritten.
 */
export async function resolveAsCompleted(target: InDoubtTarget, id: string): Promise<Resolution> {
  const nowMs = Date.now();
  const expiresAt = resolvedExpiresAt(target, nowMs);
  const { store, record: found } = await locateRecord(target, id, nowMs);
  const record = resolvable(found, id, nowMs);
  const write = await store.resolveCompleted(record, { nowMs, expiresAt });
  if (!write.written) {
    throw new ResolutionConflictError(
      `${id} changed while this command resolved it: it is now ${stateOf(write.now, nowMs)} (another ` +
        '`oncely in-doubt resolve`, or the consumer running a re-sent message, got there first). This command ' +
        'changed nothing; `oncely in-doubt list` shows whether it still needs resolving.',
      { cause: write.cause },
    );
  }
  return { id, as: 'completed' };
}

/**
 * The record, if an operator can resolve it: IN_DOUBT, or FAILED and pending a retry. Otherwise
 * the error that says why not.
 */
export function resolvable(
  record: IdempotencyRecord | undefined,
  id: string,
  nowMs: number,
): IdempotencyRecord {
  const state = stateOf(record, nowMs);
  if (record && (state === 'IN_DOUBT' || state === 'RETRY_PENDING')) return record;
  if (state === 'gone') {
    const hint = id.includes('#') ? '' : ' Record ids are namespace#key, e.g. notifications#order-7-mail.';
    throw new UnknownRecordError(
      `No idempotency record ${id}.${hint} \`oncely in-doubt list\` shows the records in doubt.`,
    );
  }
  const hint =
    state === 'FAILED'
      ? ' Its message may be on the queue (a `--as retry` sent it): the consumer runs it, or ran it and it ' +
        'failed retryably, to run again on its next delivery.'
      : '';
  throw new RecordNotInDoubtError(`${id} is ${state}, not IN_DOUBT: there is nothing to resolve.${hint}`);
}

/**
 * The `expiresAt` (epoch seconds) a record gets once resolved: a full TTL from now. Every copy of its
 * message was published before now, so the record outlives each copy's dedup horizon (DESIGN §2).
 */
export function resolvedExpiresAt(target: InDoubtTarget, nowMs: number): number {
  return Math.floor(nowMs / 1000) + ttlSecondsOf(target);
}

/** The records' lifetime, from the pipeline's `IdempotencyTtlSeconds` output. */
export function ttlSecondsOf(target: InDoubtTarget): number {
  const ttlSeconds = Number(target.resources.idempotencyTtlSeconds);
  if (!Number.isInteger(ttlSeconds) || ttlSeconds <= 0) {
    throw new DedupHorizonUnknownError(
      `The pipeline's idempotency TTL output is "${target.resources.idempotencyTtlSeconds}", not a number of ` +
        'seconds, so a resolved record cannot be given its lifetime back. Redeploy the stack (or restart ' +
        '`oncely local`) from this version. Nothing was changed.',
    );
  }
  return ttlSeconds;
}

/** Why a record IN_DOUBT cannot be retried from here. */
export function messageNotKept(id: string): MessageNotKeptError {
  return new MessageNotKeptError(
    `${id} is IN_DOUBT but kept no message to send again (it became IN_DOUBT before records kept ` +
      `their message, or the message was larger than ${MAX_KEPT_MESSAGE_BYTES / 1024} KB). Publish the ` +
      `message again under a new key, then resolve this record with \`oncely in-doubt resolve ${id} --as completed\`.`,
  );
}

/** A record's state as an operator sees it: its status, RETRY_PENDING for a FAILED one pending a retry. */
export function stateOf(record: IdempotencyRecord | undefined, nowMs: number): string {
  if (!record || isExpired(record, nowMs)) return 'gone';
  return record.status === 'FAILED' && record.unresolved === 'RETRY_PENDING'
    ? 'RETRY_PENDING'
    : record.status;
}
