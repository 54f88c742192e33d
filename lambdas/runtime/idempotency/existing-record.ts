import {
  IdempotencyConflictError,
  IdempotencyInProgressError,
  IdempotencyRejectedError,
  ResultTooLargeError,
} from './errors';
import { type IdempotencyRecord, MAX_RESULT_BYTES } from './record';

/** What a record that could not be acquired means for this call. */
export type ExistingRecordVerdict =
  | { kind: 'completed'; result?: string }
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
      if (record.resultBytes !== undefined) {
        throw new ResultTooLargeError(record.id, record.resultBytes, MAX_RESULT_BYTES);
      }
      return { kind: 'completed', result: record.result };
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
