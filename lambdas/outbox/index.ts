// `oncely/outbox`: commit your DynamoDB writes and the messages they announce together (DESIGN §9).
// The item layout (attributes, the pending index) is internal: `oncely outbox list` reads it for you.
export { OncelyConfigurationError } from '../common/configuration-error.js';
export type { TraceContext } from '../common/trace-context.js';
export { OncelyError } from '../idempotency/errors.js';
export type { TransactionWrite } from '../idempotency/store.js';
export type { PublishMessage } from '../publisher/contract.js';
export type { ValidationProblem } from '../publisher/errors.js';
export {
  OutboxTokenReusedError,
  OutboxTooManyItemsError,
  OutboxValidationError,
  OutboxWriteCanceledError,
  OutboxWriteConflictError,
  type OutboxWriteFailure,
  OutboxWriteOutcomeUnknownError,
  OutboxWriteThrottledError,
  OutboxWriteTooLargeError,
} from './errors.js';
export type { OutboxLayout } from './layout.js';
export { OUTBOX_METRICS } from './metrics.js';
export {
  Outbox,
  type OutboxMessage,
  type OutboxOptions,
  type OutboxWrite,
  type OutboxWriteResult,
} from './outbox.js';
