import type { MiddlewareObj, Request } from '@middy/core';
import type { Context } from 'aws-lambda';
import { IdempotencyInDoubtError } from './errors.js';
import { recordId } from './keys.js';
import { type IdempotencyMode, LeaseIdempotency, type LeaseIdempotencyOptions } from './lease.js';
import { tooLargeError } from './result-json.js';
import type { Lease } from './store.js';

/** `LeaseIdempotency`'s options, with how to read a request's key and payload from its event. */
export interface IdempotentRequestOptions<TEvent> extends Omit<LeaseIdempotencyOptions, 'mode'> {
  /** The request's idempotency key; `undefined` runs the handler without idempotency. */
  key: (event: TEvent) => string | undefined;
  /**
   * What must be equal for a repeat to be a duplicate rather than a conflict.
   * @default the whole event
   */
  payload?: (event: TEvent) => unknown;
  /**
   * What happens to a request whose invocation died: `at-least-once` runs it again on the next repeat.
   * @default 'at-least-once'
   */
  mode?: IdempotencyMode;
}

/**
 * Request-level idempotency for single-event handlers (the publisher). A repeat gets the stored
 * response without running the handler — also when that response is `undefined`; a concurrent
 * repeat gets `IdempotencyInProgressError`; the same key with another payload
 * `IdempotencyConflictError`. It only ever writes a record this very request acquired, so an
 * error thrown by an earlier middleware (or by its own `before`) never touches someone else's record.
 *
 * @example
 * ```ts
 * export const handler = middy(placeOrder).use(
 *   idempotentRequest({ store, namespace: 'orders', key: (event) => event.requestId }),
 * );
 * ```
 */
export function idempotentRequest<TEvent, TResult>(
  options: IdempotentRequestOptions<TEvent>,
): MiddlewareObj<TEvent, TResult, Error, Context> {
  const idempotency = new LeaseIdempotency({ ...options, mode: options.mode ?? 'at-least-once' });
  const leases = new WeakMap<Request, Lease>();

  return {
    name: 'oncely-idempotent-request',
    before: async (request) => {
      const key = options.key(request.event);
      if (key === undefined) return;
      const payload = options.payload ? options.payload(request.event) : request.event;
      const start = await idempotency.start<TResult>({ key, payload, context: request.context });
      switch (start.status) {
        case 'acquired':
          leases.set(request, start.lease);
          return;
        case 'duplicate':
          // The stored response is what a repeat gets: one too large to store cannot be replayed.
          if (start.resultBytes !== undefined) throw tooLargeError(recordId(options.namespace, key), start);
          // Middy's early-return contract that also works for `undefined` responses.
          request.earlyResponse = start.result;
          return;
        case 'in-doubt':
          throw new IdempotencyInDoubtError(`${options.namespace}#${key}`, start.reason);
      }
    },
    after: async (request) => {
      const lease = leases.get(request);
      if (!lease) return;
      leases.delete(request);
      await idempotency.recordCompletion(lease, request.response);
    },
    onError: async (request) => {
      const lease = leases.get(request);
      if (!lease) return;
      leases.delete(request);
      // The caller gets the handler's error; a failure to record it is the observer's to report.
      await idempotency.recordFailure(lease, request.error).catch(() => undefined);
    },
  };
}
