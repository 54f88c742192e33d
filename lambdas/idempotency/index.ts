// `oncely/idempotency`: the core — the store, lease and transactional modes, request idempotency, errors.
// What a user's code needs and nothing else (DESIGN §10): record layout, lease steps and key
// derivation are internal; the package's own modules import them from their source files.

export { OncelyConfigurationError } from '../common/configuration-error.js';
export type { TraceContext } from '../common/trace-context.js';
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
  RecordNotReplicatedError,
  RecordNotWrittenError,
  ResultTooLargeError,
  type StoredError,
  TransactionalStoreError,
  TransactionConditionFailedError,
  TransactionContentionError,
} from './errors.js';
export type { Delivery } from './history.js';
export {
  type EffectContext,
  type IdempotencyMode,
  LeaseIdempotency,
  type LeaseIdempotencyOptions,
  type LeaseInput,
  type LeaseOutcome,
  type RemainingTime,
} from './lease.js';
export type { LeaseStore } from './lease-store.js';
export { type IdempotentRequestOptions, idempotentRequest } from './middleware.js';
export type { IdempotencyObserver } from './observer.js';
export { type KeptMessage, MAX_RESULT_BYTES } from './record.js';
export { DynamoDBIdempotencyStore, type IdempotencyStoreOptions, type TransactionWrite } from './store.js';
export {
  MAX_TRANSACTION_WRITES,
  TransactionalIdempotency,
  type TransactionalIdempotencyOptions,
  type TransactionalOutcome,
  type TransactionPlan,
} from './transactional.js';
export type { ValkeyReplicaWait } from './valkey-replicas.js';
export {
  ValkeyIdempotencyStore,
  type ValkeyIdempotencyStoreOptions,
  type ValkeyScriptClient,
} from './valkey-store.js';
