/**
 * `oncely/client`: how other services publish through the Oncely publisher Lambda.
 *
 *   import { publish } from 'oncely/client';
 *   const { results } = await publish([{ type: 'OrderPlaced', groupId: 'customer-42', key: 'order-7', payload: order }]);
 */

export type { RetryPolicy } from '../common/backoff.js';
export { OncelyConfigurationError } from '../common/configuration-error.js';
export { createEnvelope, type MessageEnvelope, type OutgoingMessage } from '../common/envelope.js';
export type { TraceContext } from '../common/trace-context.js';
export { OncelyError } from '../idempotency/errors.js';
export {
  MAX_MESSAGES_PER_REQUEST,
  type MessageResult,
  type MessageStatus,
  type PublishMessage,
  type PublishResponse,
} from '../publisher/contract.js';
export {
  PublishConflictError,
  PublishInProgressError,
  PublishValidationError,
  type ValidationProblem,
} from '../publisher/errors.js';
export { PublisherInvocationError, PublisherResponseError, PublisherTimeoutError } from './errors.js';
export {
  PUBLISHER_FUNCTION_ENV,
  type PublishOptions,
  type PublishResult,
  publish,
} from './publish.js';
