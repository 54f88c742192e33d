// `oncely/outbox`: commit your DynamoDB writes and the messages they announce together (DESIGN §9).
export { OncelyConfigurationError } from '../common/configuration-error.js';
export {
  DEFAULT_MAX_MESSAGE_BYTES,
  DEFAULT_STUCK_AFTER_SECONDS,
  DEFAULT_SWEEP_AFTER_SECONDS,
  OUTBOX_ENVIRONMENT,
} from './environment.js';
export {
  OutboxTokenReusedError,
  OutboxTooManyItemsError,
  OutboxValidationError,
  OutboxWriteCanceledError,
  OutboxWriteConflictError,
  type OutboxWriteFailure,
  OutboxWriteOutcomeUnknownError,
} from './errors.js';
export {
  DEFAULT_PARTITION_KEY,
  DEFAULT_SORT_KEY,
  OUTBOX_ATTRIBUTES,
  OUTBOX_PENDING_INDEX,
  type OutboxLayout,
  type OutboxStatus,
} from './layout.js';
export { OUTBOX_METRICS } from './metrics.js';
export {
  ITEMS_PER_MESSAGE,
  MAX_TRANSACTION_ITEMS,
  Outbox,
  type OutboxMessage,
  type OutboxOptions,
  type OutboxWrite,
  type OutboxWriteResult,
} from './outbox.js';
