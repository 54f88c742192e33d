// `oncely/idempotency`: the core — the store, lease and transactional modes, request idempotency, errors.

export { deriveMessageKey, isValidKey } from '../common/message-key.js';
export { CompletedRecordCache } from './completed-cache.js';
export {
  IdempotencyConfigurationError,
  IdempotencyConflictError,
  IdempotencyInDoubtError,
  IdempotencyInProgressError,
  IdempotencyRejectedError,
  InvalidRecordWriteError,
  NonRetryableError,
  OncelyError,
  OutcomeUnknownError,
  RecordNotWrittenError,
  ResultTooLargeError,
  type StoredError,
  TransactionConditionFailedError,
  TransactionContentionError,
} from './errors.js';
export { recordId } from './keys.js';
export {
  type AheadStart,
  type CompletionVerdict,
  type EffectContext,
  type FailureVerdict,
  type HeldLeases,
  type IdempotencyMode,
  LeaseIdempotency,
  type LeaseIdempotencyOptions,
  type LeaseInput,
  type LeaseOutcome,
  type LeaseStart,
  type RemainingTime,
  type StartVerdict,
} from './lease.js';
export { type IdempotentRequestOptions, idempotentRequest } from './middleware.js';
export type { IdempotencyObserver } from './observer.js';
export {
  DEFAULT_RECORD_TTL_SECONDS,
  EXPIRES_AT_ATTRIBUTE,
  ID_ATTRIBUTE,
  type IdempotencyRecord,
  isExpired,
  type KeptMessage,
  MAX_KEPT_MESSAGE_BYTES,
  MAX_RESULT_BYTES,
  type RecordStatus,
  UNRESOLVED_ATTRIBUTE,
  UNRESOLVED_INDEX_NAME,
  UNRESOLVED_REASONS,
  type UnresolvedReason,
  UPDATED_AT_ATTRIBUTE,
} from './record.js';
export {
  DynamoDBIdempotencyStore,
  type IdempotencyStoreOptions,
  type Lease,
  type TransactionWrite,
} from './store.js';
export {
  MAX_TRANSACTION_WRITES,
  TransactionalIdempotency,
  type TransactionalIdempotencyOptions,
  type TransactionalOutcome,
  type TransactionPlan,
} from './transactional.js';
