import { OncelyError } from '../idempotency/errors.js';
import type { ValidationProblem } from '../publisher/errors.js';

/** The messages are invalid: nothing was written. `problems` lists each, with its index. */
export class OutboxValidationError extends OncelyError {
  /** {@inheritDoc OncelyError.errorName} */
  static override readonly errorName: string = 'OutboxValidationError';
  /** `false`: the same messages fail the same checks. */
  readonly retryable = false;
  constructor(
    /** Every problem found, each with the message's index and path. */
    readonly problems: readonly ValidationProblem[],
  ) {
    const listed = problems.slice(0, 5).map((problem) => `${problem.path}: ${problem.message}`);
    const more = problems.length > listed.length ? `; and ${problems.length - listed.length} more` : '';
    super(`The outbox write is invalid, nothing was written: ${listed.join('; ')}${more}`);
  }
}

/** What stopped a canceled transaction: one of your writes, or one of the messages. */
export type OutboxWriteFailure =
  | { kind: 'write'; index: number; code: string; message?: string }
  | { kind: 'message'; index: number; key: string; code: string; message?: string };

/**
 * DynamoDB canceled the transaction: a condition of one of your writes failed (or a message's key is
 * already in the outbox). Nothing was written and nothing will be published.
 */
export class OutboxWriteCanceledError extends OncelyError {
  /** {@inheritDoc OncelyError.errorName} */
  static override readonly errorName: string = 'OutboxWriteCanceledError';
  /** `false`: the same write meets the same refusal; change the write instead. */
  readonly retryable = false;
  constructor(
    /** What stopped the transaction: each write or message whose condition failed. */
    readonly failures: readonly OutboxWriteFailure[],
  ) {
    super(
      `The outbox write was canceled, nothing was written and nothing will be published: ${failures
        .map(describeFailure)
        .join('; ')}`,
    );
  }
}

/**
 * Another transaction was writing the same items at the same moment (DynamoDB's TransactionConflict).
 * Nothing was written: try the same write again.
 */
export class OutboxWriteConflictError extends OncelyError {
  /** {@inheritDoc OncelyError.errorName} */
  static override readonly errorName: string = 'OutboxWriteConflictError';
  /** `true`: once the other transaction ends, the same write usually commits. */
  readonly retryable = true;
}

/**
 * DynamoDB throttled the write's transaction (a partition of the table or of its pending index over
 * its capacity), again after the outbox's retries over a few seconds. Nothing was written: try the
 * same write again later, or spread the load (more `pendingShards`, DESIGN §9.1).
 */
export class OutboxWriteThrottledError extends OncelyError {
  /** {@inheritDoc OncelyError.errorName} */
  static override readonly errorName: string = 'OutboxWriteThrottledError';
  /** `true`: a partition's capacity is counted per second; the same write commits once it has room. */
  readonly retryable = true;
}

/** The write's `clientRequestToken` was used for a different write in the last 10 minutes. Nothing was written. */
export class OutboxTokenReusedError extends OncelyError {
  /** {@inheritDoc OncelyError.errorName} */
  static override readonly errorName: string = 'OutboxTokenReusedError';
  /** `false`: the token stays bound to the other write for 10 minutes; give this write its own. */
  readonly retryable = false;
}

/**
 * Whether the write committed is unknown: an earlier call with its `clientRequestToken` may have, and
 * its messages could not be read back to tell (DynamoDB throttled the read). Retry the same write
 * with the same token: it then succeeds without writing twice, or writes it once.
 */
export class OutboxWriteOutcomeUnknownError extends OncelyError {
  /** {@inheritDoc OncelyError.errorName} */
  static override readonly errorName: string = 'OutboxWriteOutcomeUnknownError';
  /** `true`: the same write with the same token finds it committed, or writes it once. */
  readonly retryable = true;
}

/** More items than one transaction takes. Nothing was written. */
export class OutboxTooManyItemsError extends OncelyError {
  /** {@inheritDoc OncelyError.errorName} */
  static override readonly errorName: string = 'OutboxTooManyItemsError';
  /** `false`: the same write is as large again; split it. */
  readonly retryable = false;
}

/**
 * The write's items together are over DynamoDB's 4 MB per transaction (each message's outbox item
 * and marker, your Puts, the keys of your other writes). Nothing was written.
 */
export class OutboxWriteTooLargeError extends OncelyError {
  /** {@inheritDoc OncelyError.errorName} */
  static override readonly errorName: string = 'OutboxWriteTooLargeError';
  /** `false`: the same write is as large again; split it. */
  readonly retryable = false;
}

function describeFailure(failure: OutboxWriteFailure): string {
  const why = failure.message ? `${failure.code} (${failure.message})` : failure.code;
  if (failure.kind === 'write') return `writes[${failure.index}]: ${why}`;
  if (failure.code === 'ConditionalCheckFailed') {
    return `messages[${failure.index}]: key "${failure.key}" is already in the outbox (written before, so not again)`;
  }
  return `messages[${failure.index}] (key "${failure.key}"): ${why}`;
}
