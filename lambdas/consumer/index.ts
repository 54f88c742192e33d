// `oncely/consumer`: the FIFO and standard batch consumers and their per-record operations (README "Writing a consumer").
// What a consumer's code names from the core (the store, the errors it throws, the modes' options)
// is exported here too, the same classes as `oncely/idempotency`'s, so one import is enough.
// Of the consumer's own errors, those a DLQ copy's `ErrorName` carries are exported, for tools
// that read it; those of a consumer wired to the wrong queue fail every batch until the stack is
// fixed, so no code handles them, and they stay in `errors.js` (DESIGN §10).
export { OncelyConfigurationError } from '../common/configuration-error.js';
export { InvalidEnvelopeError } from '../common/envelope.js';
export type { StandardSchemaV1 } from '../common/standard-schema.js';
export { CompletedRecordCache } from '../idempotency/completed-cache.js';
export {
  NonRetryableError,
  OncelyError,
  OutcomeUnknownError,
  type StoredError,
  TransactionalStoreError,
} from '../idempotency/errors.js';
export type { IdempotencyMode, LeaseIdempotencyOptions } from '../idempotency/lease.js';
export type { LeaseStore } from '../idempotency/lease-store.js';
export type { IdempotencyObserver } from '../idempotency/observer.js';
export {
  DynamoDBIdempotencyStore,
  type IdempotencyStoreOptions,
  type TransactionWrite,
} from '../idempotency/store.js';
export type { TransactionalIdempotencyOptions, TransactionPlan } from '../idempotency/transactional.js';
export type { ValkeyReplicaWait } from '../idempotency/valkey-replicas.js';
export {
  ValkeyIdempotencyStore,
  type ValkeyIdempotencyStoreOptions,
  type ValkeyScriptClient,
} from '../idempotency/valkey-store.js';
export { type DeadLetterQueueOptions, DLQ_ATTRIBUTES } from './dead-letter-queue.js';
export { CONSUMER_ENVIRONMENT } from './environment.js';
export {
  AttemptsExhaustedError,
  BusinessRuleViolationError,
  IdempotencyStoreUnavailableError,
  InvalidPayloadError,
  PastDedupHorizonError,
  UnknownMessageTypeError,
  UnparsableMessageError,
} from './errors.js';
export {
  type ConsumerTelemetry,
  type FifoBatchOptions,
  fifoBatch,
  processFifoBatch,
} from './fifo-batch.js';
export type { ConsumerHooks, InDoubtHookEvent, RecordHookEvent } from './hooks.js';
export {
  type ConsumerMessage,
  type MessageParser,
  type ParsedMessage,
  parseEnvelopeRecord,
} from './message.js';
export {
  type ConsumerOperation,
  type LeaseOperationOptions,
  type LeaseRecordContext,
  leaseOperation,
  type OperationOptions,
  type RecordContext,
  type TransactionalOperationOptions,
  transactionalOperation,
} from './operations.js';
export { processStandardBatch, type StandardBatchOptions, standardBatch } from './standard-batch.js';
export { CONSUMER_METRICS, type ConsumerLogger, type LogFields, type MetricsSink } from './telemetry.js';
