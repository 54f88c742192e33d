import type { MiddlewareObj, Request } from '@middy/core';
import type { Context } from 'aws-lambda';
import { IdempotencyConflictError, IdempotencyInProgressError } from '../idempotency/errors.js';
import { PUBLISH_NAMESPACE } from '../idempotency/keys.js';
import type { PublishResponse } from './contract.js';
import { PublishConflictError, PublishInProgressError } from './errors.js';
import { mayBeOnQueue } from './ordered-sender.js';
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

/** Why a rerun's `failed` or `blocked` message may be on the queue after all. */
const EARLIER_RUN = 'an earlier run of this request may have sent it';

/**
 * A run of a request after one that ended without an outcome (its invocation died, its completion
 * write kept failing) sees nothing of what that one sent, and SQS's answers to this run cannot
 * tell either: no message of it is certainly not on the queue. So its `failed` and `blocked`
 * results are `unknown` (DESIGN §6). Used after the idempotency middleware, whose `after` then
 * records the response as this one leaves it.
 */
export function earlierRunUncertainty(
  attemptOf: (request: Request<PublishCommand, PublishResponse, Error, Context>) => number | undefined,
): MiddlewareObj<PublishCommand, PublishResponse, Error, Context> {
  return {
    name: 'oncely-publisher-earlier-run',
    after: (request) => {
      const { response } = request;
      if (!response || (attemptOf(request) ?? 1) <= 1) return;
      request.response = {
        ...response,
        results: response.results.map((result) => mayBeOnQueue(result, EARLIER_RUN)),
      };
    },
  };
}
