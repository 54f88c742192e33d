import { OncelyError } from '../idempotency/errors.js';

/**
 * A function error other than the publisher's own (validation, conflict, in progress): a timeout,
 * a crash, an AWS error inside the publisher. Retried by `publish` — safely, since the requestId
 * turns a repeat into a replay — and thrown once the attempts run out.
 */
export class PublisherInvocationError extends OncelyError {
  /** {@inheritDoc OncelyError.errorName} */
  static override readonly errorName: string = 'PublisherInvocationError';
  /** `true`: a timeout or crash may pass, and the requestId makes a repeat a replay, not a second publish. */
  readonly retryable = true;

  constructor(
    /** Lambda's `errorType`, e.g. `Sandbox.Timedout`. */
    readonly errorType: string,
    /** Lambda's `errorMessage`: what the function said went wrong. */
    readonly errorMessage: string,
  ) {
    super(`The publisher function failed with ${errorType}: ${errorMessage}`);
  }
}

/** The function answered, but not with a publish response: is it really the Oncely publisher? */
export class PublisherResponseError extends OncelyError {
  /** {@inheritDoc OncelyError.errorName} */
  static override readonly errorName: string = 'PublisherResponseError';
  /** `false`: the same function answers the same way; check which function is called. */
  readonly retryable = false;
}

/**
 * The publisher did not answer an `Invoke` within `invokeTimeoutMs` (a stalled connection, say).
 * Retried by `publish` with the same requestId, which replays the request or waits for it; thrown
 * once the attempts run out. The request may have run: publish again with the same requestId.
 */
export class PublisherTimeoutError extends OncelyError {
  /** {@inheritDoc OncelyError.errorName} */
  static override readonly errorName: string = 'PublisherTimeoutError';
  /** `true`: the requestId makes a repeat a replay, or a wait for the attempt still running. */
  readonly retryable = true;

  constructor(
    /** The bound that ran out: `PublishOptions.invokeTimeoutMs`. */
    readonly timeoutMs: number,
  ) {
    super(`The publisher did not answer within ${timeoutMs} ms (invokeTimeoutMs)`);
  }
}
