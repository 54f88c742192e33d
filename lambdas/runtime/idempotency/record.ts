import type { StoredError } from './errors';

/** The table's TTL attribute (epoch seconds). The CDK construct configures TTL from this constant. */
export const EXPIRES_AT_ATTRIBUTE = 'expiresAt';

/** The table's partition key. */
export const ID_ATTRIBUTE = 'id';

/**
 * Records must outlive every way a message can come back (queue retention + DLQ retention, each at
 * most 14 days in SQS). The deployed stack sets the exact figure; this default covers the maximum.
 */
export const DEFAULT_RECORD_TTL_SECONDS = 30 * 24 * 60 * 60;

/** DynamoDB items are limited to 400 KB; the rest of the record needs a little room. */
export const MAX_RESULT_BYTES = 350 * 1024;

export type RecordStatus = 'IN_PROGRESS' | 'COMPLETED' | 'FAILED' | 'REJECTED' | 'IN_DOUBT';

/** One idempotency record as stored (DESIGN §3). */
export interface IdempotencyRecord {
  id: string;
  status: RecordStatus;
  payloadHash: string;
  /** Epoch seconds; past it the record counts as absent even before TTL deletes it. */
  expiresAt: number;
  leaseToken?: string;
  /** Epoch milliseconds. */
  leaseExpiresAt?: number;
  /** The handler's result as JSON; absent when it returned `undefined`. */
  result?: string;
  /** Set instead of `result` when the result was too large to store. */
  resultBytes?: number;
  error?: StoredError;
  attempts?: number;
  updatedAt?: number;
}

export function isExpired(record: IdempotencyRecord, nowMs: number): boolean {
  return record.expiresAt * 1000 <= nowMs;
}
