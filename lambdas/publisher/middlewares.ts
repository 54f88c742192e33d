import type { MiddlewareObj } from '@middy/core';
import { IdempotencyConflictError, IdempotencyInProgressError } from '../idempotency/errors.js';
import { PUBLISH_NAMESPACE } from '../idempotency/keys.js';
import type { PublishResponse } from './contract.js';
import { PublishConflictError, PublishInProgressError } from './errors.js';
import { type PublishCommand, type ValidationLimits, validatePublishRequest } from './validation.js';

/**
 * Validates the raw event and replaces it with the prepared command. It runs first, so an invalid
 * request touches neither the idempotency table nor the queue.
 */
export function validation(limits: ValidationLimits): MiddlewareObj<PublishCommand, PublishResponse> {
  return {
    name: 'oncely-publish-validation',
    before: (request) => {
      // The only place the raw event is looked at: everything after sees a validated command.
      request.event = validatePublishRequest(request.event as unknown, limits, new Date());
    },
  };
}

/**
 * Replaces the idempotency core's errors with the publisher's own, whose names and details survive
 * the Lambda boundary (see errors.ts). Used before the idempotency middleware, so that its onError
 * runs after that one's.
 */
export function publisherErrors(): MiddlewareObj<PublishCommand, PublishResponse> {
  return {
    name: 'oncely-publisher-errors',
    onError: (request) => {
      const { error } = request;
      if (error instanceof IdempotencyConflictError) {
        request.error = new PublishConflictError(requestIdOf(error.id));
      } else if (error instanceof IdempotencyInProgressError) {
        request.error = new PublishInProgressError(requestIdOf(error.id), error.leaseExpiresAt);
      }
    },
  };
}

function requestIdOf(recordId: string): string {
  return recordId.slice(PUBLISH_NAMESPACE.length + 1);
}
