import type { MiddlewareObj, Request } from '@middy/core';
import type { Context } from 'aws-lambda';
import { type KnownKeys, refuseUnknownKeys } from '../common/known-keys.js';
import { IdempotencyInDoubtError, RecordNotWrittenError } from './errors.js';
import { recordId } from './keys.js';
import {
  type IdempotencyMode,
  LEASE_IDEMPOTENCY_OPTION_KEYS,
  LeaseIdempotency,
  type LeaseIdempotencyOptions,
} from './lease.js';
import type { Lease } from './lease-store.js';
import { tooLargeError } from './result-json.js';

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
 * A response is returned only once its record says `COMPLETED`, so that what a caller is told is
 * what every repeat is told. If that write still fails after its retries (or every answer to it
 * was lost), or the lease was lost to another invocation, the request throws
 * `RecordNotWrittenError` (retryable) instead of the response: the effect has happened, but the
 * record stays IN_PROGRESS until its lease expires, and a repeat after that runs the handler again
 * (at-least-once; at-most-once parks it IN_DOUBT) — or, if the write was applied after all, gets
 * the stored response. A caller that retries must therefore accept a second run after an error,
 * never after a response.
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
  return requestIdempotency<TEvent, TResult>(options).middleware;
}

/**
 * `idempotentRequest`'s middleware, and the run of its request an invocation holds (`attemptOf`: 1
 * for the first, more once a run before it ended without an outcome), for a later middleware's
 * `after`, which runs before this one records the response. The publisher's (DESIGN §6): a run
 * after another may find on the queue what that one sent.
 */
export function requestIdempotency<TEvent, TResult>(
  options: IdempotentRequestOptions<TEvent>,
): {
  middleware: MiddlewareObj<TEvent, TResult, Error, Context>;
  attemptOf(request: Request<TEvent, TResult, Error, Context>): number | undefined;
} {
  // Written here rather than beside the options: esbuild keeps an unused object spread at the top
  // of a module, in every bundle of the package's idempotency entry.
  refuseUnknownKeys('idempotentRequest()', options, {
    ...LEASE_IDEMPOTENCY_OPTION_KEYS,
    key: true,
    payload: true,
  } satisfies KnownKeys<IdempotentRequestOptions<unknown>>);
  // Its own options stay here: the lease refuses keys it does not take.
  const { key: _key, payload: _payload, ...leaseOptions } = options;
  const idempotency = new LeaseIdempotency({ ...leaseOptions, mode: options.mode ?? 'at-least-once' });
  const leases = new WeakMap<Request, Lease>();

  const middleware: MiddlewareObj<TEvent, TResult, Error, Context> = {
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
      const completion = await idempotency.recordCompletion(lease, request.response);
      if (completion === 'recorded') return;
      // A response no repeat would get is not given: the caller retries instead (see above).
      throw completion === 'lease-lost'
        ? new RecordNotWrittenError(lease.id, 'COMPLETED', 'the lease was lost to another invocation')
        : completion;
    },
    onError: async (request) => {
      const lease = leases.get(request);
      if (!lease) return;
      leases.delete(request);
      // The caller gets the handler's error; a failure to record it is the observer's to report.
      await idempotency.recordFailure(lease, request.error).catch(() => undefined);
    },
  };
  return { middleware, attemptOf: (request) => leases.get(request)?.attempt };
}
