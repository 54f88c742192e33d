/**
 * The base of every Oncely error. `retryable` tells a caller (the FIFO consumer, the publisher
 * client) whether trying the same input again can help.
 *
 * Names are what records, DLQ attributes and logs show, and a minifying bundler renames classes:
 * so each Oncely class, this one included, fixes its name in an own static `errorName`, the only
 * way the package names an error (test/conventions/error-names.test.ts). A subclass of yours
 * without one is named after its class (bundle with esbuild's `keepNames`, as the Oncely
 * construct does).
 */
export abstract class OncelyError extends Error {
  /**
   * The error's name, fixed so that a minifying bundler cannot change it: each instance's `name`,
   * and so what idempotency records, DLQ attributes and logs show.
   */
  static readonly errorName: string = 'OncelyError';
  /**
   * Whether trying the same input again can help. The FIFO consumer rejects a message whose
   * handler threw a non-retryable error for good, to the DLQ at once; `publish` retries only
   * retryable errors.
   */
  abstract readonly retryable: boolean;
  constructor(message: string, options?: ErrorOptions) {
    super(message, options);
    const type = new.target as { errorName?: string; name: string };
    this.name = Object.hasOwn(type, 'errorName') && type.errorName ? type.errorName : type.name;
  }
}

/** Thrown by a handler for a failure that no retry can fix (bad input, broken business rule). */
export class NonRetryableError extends OncelyError {
  /** {@inheritDoc OncelyError.errorName} */
  static override readonly errorName: string = 'NonRetryableError';
  /** `false`: the same input fails the same way again. */
  readonly retryable = false;
}
