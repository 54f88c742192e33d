import type { TraceContext } from '../common/trace-context.js';
import type { StoredError } from './errors.js';

/** The table's TTL attribute (epoch seconds). The CDK construct configures TTL from this constant. */
export const EXPIRES_AT_ATTRIBUTE = 'expiresAt';

/** The table's partition key. */
export const ID_ATTRIBUTE = 'id';

/**
 * Records must outlive every way a message can come back (queue retention + DLQ retention, each at
 * most 14 days in SQS). The deployed stack sets the exact figure; this default covers the maximum.
 */
export const DEFAULT_RECORD_TTL_SECONDS = 30 * 24 * 60 * 60;

/**
 * The id of the mark saying that the consumer sent the SQS message `messageId` to the DLQ (DESIGN
 * §5). "/" is in no namespace (`recordId`), so a mark never shares an id with a record.
 */
export function deadLetterMarkId(messageId: string): string {
  return `oncely/dead-lettered#${messageId}`;
}

/**
 * The id of the dead-letter log of the record `recordId`: each time the consumer sent a message of
 * its key to the DLQ (`oncely history`, DESIGN §5), also when no record was written (transactional
 * mode, a conflict, a message past the dedup horizon). An item of its own, written on that path only.
 */
export function deadLetterLogId(recordId: string): string {
  return `oncely/dead-letters#${recordId}`;
}

/**
 * A DLQ mark as stored: claimed (`claimToken`, `claimExpiresAt`) by the invocation about to send the
 * message, then sent (`deadLetteredAt`, written after the send over the claim). Lives as long as a
 * record (`expiresAt`).
 */
export interface DeadLetterMark {
  id: string;
  expiresAt: number;
  /** Epoch ms: the message is in the DLQ. */
  deadLetteredAt?: number;
  claimToken?: string;
  /** Epoch ms: past it, a claim without `deadLetteredAt` is another invocation's to take. */
  claimExpiresAt?: number;
}

/**
 * What a claim of a message's DLQ send found: the claim is this call's (its token releases it),
 * the message was sent already, or another invocation's claim runs (DESIGN §5).
 */
export type DeadLetterClaim =
  | { status: 'claimed'; token: string }
  | { status: 'sent' }
  | { status: 'claimed-elsewhere' };

/** DynamoDB items are limited to 400 KB; the rest of the record needs a little room. */
export const MAX_RESULT_BYTES = 350 * 1024;

/**
 * An IN_DOUBT record keeps its message only up to this size: the record must stay within
 * DynamoDB's 400 KB item limit, while a queue may allow messages of up to 1 MiB.
 */
export const MAX_KEPT_MESSAGE_BYTES = 300 * 1024;

/**
 * A sparse global secondary index of the records an operator must look at (DESIGN §3): only
 * records carrying {@link UNRESOLVED_ATTRIBUTE} are in it, so listing them never scans the table.
 * Partition key: that attribute; sort key: `updatedAt` (epoch ms). Projection: the keys and
 * {@link UNRESOLVED_INDEX_ATTRIBUTES}, never the kept message, so counting them reads little.
 */
export const UNRESOLVED_INDEX_NAME = 'unresolved-summary';

/** What the unresolved index projects besides the keys: what the monitor and `oncely in-doubt list` read. */
export const UNRESOLVED_INDEX_ATTRIBUTES: readonly string[] = ['expiresAt', 'attempts', 'error'];

/**
 * The unresolved index of earlier versions, projecting all attributes (the kept messages too).
 * CloudFormation creates or deletes one index per table update, so this version adds the new one
 * and keeps this; readers fall back on it while the new one is backfilling. The next removes it.
 */
export const LEGACY_UNRESOLVED_INDEX_NAME = 'unresolved';

/** Present only on records that need an operator; its value says why ({@link UnresolvedReason}). */
export const UNRESOLVED_ATTRIBUTE = 'unresolved';

/** The sort key of the unresolved index. */
export const UPDATED_AT_ATTRIBUTE = 'updatedAt';

/**
 * Why a record is in the unresolved index: `IN_DOUBT` (the effect may or may not have happened) or
 * `RETRY_PENDING` (an operator chose `--as retry`: the record is FAILED and keeps its message until
 * the message is back on the queue; a crash in between leaves it here, to be sent again).
 */
export type UnresolvedReason = 'IN_DOUBT' | 'RETRY_PENDING';

/** Every {@link UnresolvedReason}: the partitions of the unresolved index. */
export const UNRESOLVED_REASONS: readonly UnresolvedReason[] = ['IN_DOUBT', 'RETRY_PENDING'];

export type RecordStatus = 'IN_PROGRESS' | 'COMPLETED' | 'FAILED' | 'REJECTED' | 'IN_DOUBT';

/**
 * The message a lease-mode record was run for, as it arrived: an at-most-once consumer acknowledges
 * a message when its record becomes IN_DOUBT, so the record keeps it for an operator who decides
 * to run it again (`oncely in-doubt resolve --as retry`).
 */
export interface KeptMessage {
  /** The SQS message body (the envelope). */
  body: string;
  /** The SQS message group it is re-sent to. */
  groupId: string;
  /**
   * The producer's trace context it arrived with, re-sent with it (DESIGN §6).
   * @default none: it arrived without one
   */
  traceContext?: TraceContext;
}

/** The message an IN_DOUBT record keeps, unless it is too large for the record ({@link MAX_KEPT_MESSAGE_BYTES}). */
export function keepable(message: KeptMessage | undefined): KeptMessage | undefined {
  if (!message || Buffer.byteLength(message.body, 'utf8') > MAX_KEPT_MESSAGE_BYTES) return undefined;
  return message;
}

/** What an operator's command did to the record: `oncely in-doubt resolve --as completed`, `--as retry` and its send. */
export type OperatorAction = 'resolved-completed' | 'resolved-retry' | 'retry-sent';

/** One step of a record's life as stored. */
export interface HistoryEntry {
  /** The status written, or `TRIMMED` where older entries were dropped. */
  s: RecordStatus | 'TRIMMED';
  /** When, epoch milliseconds, by the writer's clock. */
  t: number;
  /** The run it belongs to (the record's `attempts`); on outcomes. */
  a?: number;
  /** The first 8 characters of the lease token: which lease wrote it (an acquire), or ended (an outcome, a park). */
  l?: string;
  /** On an acquire: the SQS message id of the delivery that took the lease. */
  m?: string;
  /** On an acquire: SQS's receive count of that delivery. */
  r?: number;
  /** On a record's first acquire: the envelope's `publishedAt`. */
  p?: string;
  /** On a failure or a park: the error's name (the record keeps the last one whole). */
  x?: string;
  /** On a failure the consumer dead-lettered: the id of the message it sent to the DLQ. */
  d?: string;
  /** An operator's command wrote it. */
  o?: OperatorAction;
  /** On `TRIMMED`: how many entries were dropped. */
  n?: number;
}

/** One idempotency record as stored (DESIGN §3). */
export interface IdempotencyRecord {
  id: string;
  status: RecordStatus;
  payloadHash: string;
  /**
   * Epoch seconds; past it the record counts as absent even before TTL deletes it. Absent while the
   * record is unresolved (IN_DOUBT or RETRY_PENDING): it keeps a message acknowledged long ago, so it
   * must not expire before an operator resolves it, which gives it a full TTL again.
   */
  expiresAt?: number;
  leaseToken?: string;
  /** Epoch milliseconds. */
  leaseExpiresAt?: number;
  /**
   * Set on an at-most-once lease taken ahead of its record's turn (a FIFO group's later records):
   * its effect has not started — unless the record {@link after} names says otherwise. Removed by
   * a write of its own that lets the effect start. Found expired and not started, such a lease is
   * taken over like a FAILED record, never parked IN_DOUBT.
   */
  unstarted?: boolean;
  /**
   * On an unstarted lease: the id of the record before it in its group, whose completion may let
   * it start (that record's {@link startedNext} then names this lease) without a write of its own.
   */
  after?: string;
  /**
   * On a COMPLETED record: the lease of the next record of its group that this completion let
   * start (its id and token). An expired unstarted lease named here may have run: it is parked IN_DOUBT.
   */
  startedNext?: { id: string; token: string };
  /** The handler's result as JSON; absent when it returned `undefined`. */
  result?: string;
  /** Set instead of `result` when the result was too large to store. */
  resultBytes?: number;
  error?: StoredError;
  attempts?: number;
  /**
   * On a record the consumer sent to the DLQ for failing `maxAttempts` times: its `attempts` then.
   * A redriven copy's attempts count from there (DESIGN §5).
   */
  attemptsAtDeadLetter?: number;
  /**
   * On a FAILED record that the consumer sent to the DLQ: the SQS message it sent. Removed by the
   * next acquire, which hands it to the consumer: that message, back again, is not run (DESIGN §5).
   */
  deadLetteredMessageId?: string;
  updatedAt?: number;
  /** IN_DOUBT (or FAILED pending a retry) only, when the caller passed it and it fits {@link MAX_KEPT_MESSAGE_BYTES}. */
  message?: KeptMessage;
  /**
   * On an IN_DOUBT record: who reported it (the observer's `inDoubt`, the consumer's `onInDoubt`
   * hook), so that it is reported once. The token of the write that parked or claimed it, or
   * {@link IN_DOUBT_REPORT_PENDING} when another record's delivery parked it (fencing it, DESIGN
   * §4.1) without its message: its own next delivery reports it, and keeps its message.
   */
  inDoubtReport?: string;
  /** Only on records an operator must resolve: they are in the unresolved index. */
  unresolved?: UnresolvedReason;
  /** Each status it was written with, oldest first (`history.ts`, DESIGN §3); absent on records written before it. */
  history?: HistoryEntry[];
}

/** {@link IdempotencyRecord.inDoubtReport} of a record parked by another record's delivery: not reported yet. */
export const IN_DOUBT_REPORT_PENDING = 'pending';

export function isExpired(record: IdempotencyRecord, nowMs: number): boolean {
  return record.expiresAt !== undefined && record.expiresAt * 1000 <= nowMs;
}
