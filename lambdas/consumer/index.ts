// `oncely/consumer`: the FIFO batch consumer and its per-record operations (README "Writing a consumer").
export { OncelyConfigurationError } from '../common/configuration-error.js';
export { InvalidEnvelopeError } from '../common/envelope.js';
// What a consumer's functions throw, without a second import (the same classes as `oncely/idempotency`'s).
export { NonRetryableError, OutcomeUnknownError } from '../idempotency/errors.js';
export type { IdempotencyMode } from '../idempotency/lease.js';
export type { TransactionWrite } from '../idempotency/store.js';
export type { TransactionPlan } from '../idempotency/transactional.js';
export { type DeadLetterQueueOptions, DLQ_ATTRIBUTES } from './dead-letter-queue.js';
export {
  CONSUMER_ENVIRONMENT,
  type ConsumerEnvironment,
  type ConsumerVariable,
  readConsumerEnvironment,
} from './environment.js';
export {
  BusinessRuleViolationError,
  IdempotencyStoreUnavailableError,
  InvalidPayloadError,
  MissingMessageGroupError,
  PastDedupHorizonError,
  UnknownMessageTypeError,
  UnparsableMessageError,
} from './errors.js';
export {
  DEFAULT_MAX_CONCURRENT_GROUPS,
  type FifoBatchOptions,
  fifoBatch,
  processFifoBatch,
} from './fifo-batch.js';
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
  type RecordContext,
  type TransactionalOperationOptions,
  transactionalOperation,
} from './operations.js';
export { CONSUMER_METRICS, type ConsumerLogger, type LogFields, type MetricsSink } from './telemetry.js';
