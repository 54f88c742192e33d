import { IdempotencyConflictError, IdempotencyInProgressError, IdempotencyRejectedError } from './errors.js';
import type { IdempotencyRecord } from './record.js';

/** What a record that could not be acquired means for this call. */
export type ExistingRecordVerdict =
  /** Done: `result` as stored, or `resultBytes` when it was too large to store. */
  | { kind: 'completed'; result?: string; resultBytes?: number }
  | { kind: 'in-doubt'; record: IdempotencyRecord }
  /** IN_PROGRESS past its lease, found by an at-most-once caller: to be parked as IN_DOUBT. */
  | { kind: 'expired-lease'; record: IdempotencyRecord };

/**
 * Interprets the record that blocked an acquire (or a transaction). Outcomes a caller must not
 * swallow are thrown as typed errors: conflict, in progress elsewhere, a replayed rejection.
 */
export function judgeExistingRecord(
  record: IdempotencyRecord,
  payloadHash: string,
  nowMs: number,
): ExistingRecordVerdict {
  if (record.payloadHash !== payloadHash) throw new IdempotencyConflictError(record.id);
  switch (record.status) {
    case 'COMPLETED':
      return { kind: 'completed', result: record.result, resultBytes: record.resultBytes };
    case 'REJECTED':
      throw new IdempotencyRejectedError(record.id, record.error ?? { name: 'Error', message: 'unknown' });
    case 'IN_DOUBT':
      return { kind: 'in-doubt', record };
    case 'IN_PROGRESS':
      if ((record.leaseExpiresAt ?? 0) <= nowMs) return { kind: 'expired-lease', record };
      throw new IdempotencyInProgressError(record.id, record.leaseExpiresAt ?? nowMs);
    case 'FAILED':
      // A FAILED record with this payload is acquirable, so only a transaction meets one here
      // (a lease-mode record in a transactional namespace): retrying is all a caller can do.
      throw new IdempotencyInProgressError(record.id, nowMs);
  }
}
