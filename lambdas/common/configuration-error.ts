import { OncelyError } from './oncely-error.js';

/**
 * Oncely is configured wrong: a function's environment variable is missing or invalid, a
 * construct's props cannot work, or an options object has a key its entry point does not take
 * (`known-keys.ts`). No retry can fix it. The message names each variable, the construct by its
 * path, or each unknown key with the nearest valid one, and says what to do.
 *
 * `Oncely`, not a bare `ConfigurationError`: the name is what logs and DLQ attributes show, beside
 * the idempotency core's own `IdempotencyConfigurationError` (a bad key or option passed in code).
 */
export class OncelyConfigurationError extends OncelyError {
  /** {@inheritDoc OncelyError.errorName} */
  static override readonly errorName: string = 'OncelyConfigurationError';
  /** `false`: a retry reads the same configuration; fix it and deploy again. */
  readonly retryable = false;
  constructor(
    /** What is wrong: environment variables by name, a construct by its node path, or unknown option keys. */
    readonly sources: readonly string[],
    message: string,
  ) {
    super(message);
  }
}
