/**
 * `oncely/client`: how other services publish through the Oncely publisher Lambda.
 *
 *   import { publish } from 'oncely/client';
 *   const { results } = await publish([{ type: 'OrderPlaced', groupId: 'customer-42', key: 'order-7', payload: order }]);
 */

export { OncelyConfigurationError } from '../common/configuration-error.js';
export { createEnvelope, type MessageEnvelope, type OutgoingMessage } from '../common/envelope.js';
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
export { PublisherInvocationError, PublisherResponseError } from './errors.js';
export {
  DEFAULT_CLIENT_RETRY,
  DEFAULT_MAX_LEASE_WAIT_MS,
  DEFAULT_RESEND_UNKNOWN_ROUNDS,
  PUBLISHER_FUNCTION_ENV,
  type PublishOptions,
  type PublishResult,
  publish,
} from './publish.js';
