/**
 * Errors of the idempotency core. Each says what happened and what to do; `retryable` tells a
 * caller (the FIFO consumer, the publisher client) whether trying the same input again can help.
 * Their base classes are in common/oncely-error.ts, where every part of Oncely finds them.
 */
import { NonRetryableError, OncelyError } from '../common/oncely-error.js';

export { NonRetryableError, OncelyError };

/**
 * Thrown by a handler whose effect's outcome is unknown: its request went out, then it timed out or
 * the connection reset. At-most-once records `IN_DOUBT` and never re-runs it; at-least-once retries.
 */
export class OutcomeUnknownError extends OncelyError {
  /** {@inheritDoc OncelyError.errorName} */
  static override readonly errorName: string = 'OutcomeUnknownError';
  /** `true`: at-least-once runs the effect again; at-most-once records `IN_DOUBT` instead and never does. */
  readonly retryable = true;
}

/** Another invocation holds the lease on this key right now. Retry later. */
export class IdempotencyInProgressError extends OncelyError {
  /** {@inheritDoc OncelyError.errorName} */
  static override readonly errorName: string = 'IdempotencyInProgressError';
  /** `true`: once the other invocation finishes or its lease expires, a retry can go on. */
  readonly retryable = true;
  constructor(
    /** The record's id: `namespace#key`. */
    readonly id: string,
    /** Epoch milliseconds when the other invocation's lease expires (the current time when unknown). */
    readonly leaseExpiresAt: number,
  ) {
    super(
      `"${id}" is being processed by another invocation (lease until ${new Date(leaseExpiresAt).toISOString()}). ` +
        'Retry after that; if the other invocation died, its lease expires and the key can be taken over.',
    );
  }
}

/** The record is IN_DOUBT: the effect may or may not have happened; an operator must resolve it. */
export class IdempotencyInDoubtError extends OncelyError {
  /** {@inheritDoc OncelyError.errorName} */
  static override readonly errorName: string = 'IdempotencyInDoubtError';
  /** `false`: only an operator can tell whether the effect happened. */
  readonly retryable = false;
  constructor(
    /** The record's id: `namespace#key`. */
    readonly id: string,
    /** The error that left the outcome unknown, as the record stores it. */
    readonly reason: StoredError,
  ) {
    super(
      `"${id}" is IN_DOUBT (${reason.message}): it is never run again automatically. ` +
        'Check whether the effect happened, then resolve it with `oncely in-doubt resolve`.',
    );
  }
}

/** The key was used before with a different payload: two different messages share one key. */
export class IdempotencyConflictError extends OncelyError {
  /** {@inheritDoc OncelyError.errorName} */
  static override readonly errorName: string = 'IdempotencyConflictError';
  /** `false`: the key stays bound to the payload it was first used with. */
  readonly retryable = false;
  constructor(
    /** The record's id: `namespace#key`. */
    readonly id: string,
  ) {
    super(
      `"${id}" was already used with a different payload. An idempotency key must identify one message: ` +
        'give this message its own key, or send exactly the same payload when retrying.',
    );
  }
}

/** A duplicate of a message that was rejected permanently: the original rejection, replayed. */
export class IdempotencyRejectedError extends OncelyError {
  /** {@inheritDoc OncelyError.errorName} */
  static override readonly errorName: string = 'IdempotencyRejectedError';
  /** `false`: the rejection is stored, and every duplicate gets it again. */
  readonly retryable = false;
  constructor(
    /** The record's id: `namespace#key`. */
    readonly id: string,
    /** The error that rejected the message, as the record stores it. */
    readonly original: StoredError,
  ) {
    super(`"${id}" was rejected earlier and is not run again: ${original.name}: ${original.message}`);
  }
}

/** The effect's result cannot be stored in the idempotency record (DynamoDB items are limited to 400 KB). */
export class ResultTooLargeError extends OncelyError {
  /** {@inheritDoc OncelyError.errorName} */
  static override readonly errorName: string = 'ResultTooLargeError';
  /** `false`: the effect completed and is not run again; its result stays too large. */
  readonly retryable = false;
  constructor(
    /** The record's id: `namespace#key`. */
    readonly id: string,
    /** The result's size as JSON, in bytes. */
    readonly bytes: number,
    /** The largest result a record stores, in bytes. */
    readonly limitBytes: number,
  ) {
    super(
      `"${id}" completed and will not run again, but its result (${bytes} bytes as JSON) exceeds the ` +
        `${limitBytes}-byte limit of an idempotency record, so it was not stored and duplicates cannot replay it. ` +
        'Return something smaller from the handler (an id or a summary), and keep large data elsewhere.',
    );
  }
}

/** A business write of a transactional handler failed its own condition (not a duplicate). */
export class TransactionConditionFailedError extends OncelyError {
  /** {@inheritDoc OncelyError.errorName} */
  static override readonly errorName: string = 'TransactionConditionFailedError';
  /** `false`: the handler's own conditions refused this input; the message is rejected. */
  readonly retryable = false;
  constructor(
    /** The record's id: `namespace#key`. */
    readonly id: string,
    /** Each business write whose condition failed: its index among the handler's writes, DynamoDB's code and message. */
    readonly failures: readonly { index: number; code: string; message?: string }[],
  ) {
    const list = failures.map((f) => `write ${f.index}: ${f.code}${f.message ? ` (${f.message})` : ''}`);
    super(
      `"${id}": the transaction was cancelled by its business writes, nothing was applied: ${list.join('; ')}`,
    );
  }
}

/** DynamoDB kept cancelling the transaction because concurrent transactions touched the same items. */
export class TransactionContentionError extends OncelyError {
  /** {@inheritDoc OncelyError.errorName} */
  static override readonly errorName: string = 'TransactionContentionError';
  /** `true`: the concurrent transactions end; a later attempt usually commits. */
  readonly retryable = true;
  constructor(
    /** The record's id: `namespace#key`. */
    readonly id: string,
    /** How many times the transaction was tried. */
    readonly attempts: number,
  ) {
    super(`"${id}": the transaction conflicted with concurrent transactions ${attempts} times; retry later.`);
  }
}

/**
 * What happened to a record's effect could not be written to its record, even after retries. The
 * message must not be acknowledged (DESIGN §3): SQS redelivers it, and that delivery finds the
 * record's lease and resolves it (IN_DOUBT at-most-once, a re-run at-least-once). Likewise a
 * request of `idempotentRequest` throws it instead of its response: a repeat after the lease
 * settles the record.
 */
export class RecordNotWrittenError extends OncelyError {
  /** {@inheritDoc OncelyError.errorName} */
  static override readonly errorName: string = 'RecordNotWrittenError';
  /** `true`: the message is not acknowledged, and its redelivery settles the record. */
  readonly retryable = true;
  constructor(
    /** The record's id: `namespace#key`. */
    readonly id: string,
    /** What was to be recorded: `COMPLETED`, or the failure's verdict (`failed`, `rejected`, `in-doubt`). */
    readonly outcome: string,
    cause: unknown,
  ) {
    super(
      `"${id}": the effect's outcome (${outcome}) could not be recorded (${describeError(cause)}). It is not ` +
        'acknowledged or answered: a redelivery of the message, or a repeat of the request once its lease ' +
        'expired, settles the record. Check DynamoDB.',
      { cause },
    );
  }
}

/**
 * The Oncely errors that are the store failing rather than the record: a consumer fails the whole
 * batch on them (`asStoreFailure`). Their constructors add them, so that the check needs none of
 * their classes: a consumer whose store never throws one (DynamoDB's) does not bundle them.
 */
const storeFailures = new WeakSet<object>();

/**
 * Whether `error` is an Oncely error of the store's, not of the record's (`RecordNotReplicatedError`).
 * @internal
 */
export function isStoreFailure(error: unknown): boolean {
  return storeFailures.has(error as object); // false for anything but an object it holds
}

/**
 * A `ValkeyIdempotencyStore` with `waitForReplicas` wrote a step an effect's safety rests on (a
 * lease, a start mark, a completion), and fewer replicas than it waits for acknowledged the write
 * in time (DESIGN §3.1). The write is on the primary, but a failover could lose it: it is treated
 * as a write whose answer was lost, and not acted on — no effect starts on it, no message is
 * acknowledged on it.
 */
export class RecordNotReplicatedError extends OncelyError {
  /** {@inheritDoc OncelyError.errorName} */
  static override readonly errorName: string = 'RecordNotReplicatedError';
  /** `true`: once the replicas catch up, or a failover ends, the same step succeeds. */
  readonly retryable = true;
  constructor(
    /** The record's id: `namespace#key`. */
    readonly id: string,
    /** How many replicas acknowledged the write. */
    readonly acknowledged: number,
    /** How many replicas the store waits for (`waitForReplicas.replicas`). */
    readonly replicas: number,
    /** How long the server waited for them, in milliseconds (`waitForReplicas.timeoutMs`). */
    readonly timeoutMs: number,
  ) {
    super(
      `"${id}": the write was applied on the Valkey primary, but ${acknowledged} of the ${replicas} replica(s) the ` +
        `store waits for acknowledged it within ${timeoutMs} ms, so a failover could lose it: it is not acted on. ` +
        "Check the replication group's replicas (ReplicationLag, failover events); a retry succeeds once they " +
        'catch up.',
    );
    storeFailures.add(this);
  }
}

/**
 * DynamoDB refused this record's own writes as invalid (ValidationException: an item over 400 KB,
 * an invalid expression): no retry can fix it, and no other record is affected.
 */
export class InvalidRecordWriteError extends NonRetryableError {
  /** {@inheritDoc OncelyError.errorName} */
  static override readonly errorName: string = 'InvalidRecordWriteError';
  constructor(idempotencyKey: string, cause: unknown) {
    super(
      `DynamoDB refused the writes of "${idempotencyKey}" as invalid (${describeError(cause)}); nothing was applied. ` +
        'Fix the writes (item size, expressions): no retry can make them valid.',
      { cause },
    );
  }
}

/**
 * A transactional operation was given a store other than `DynamoDBIdempotencyStore` (a
 * `ValkeyIdempotencyStore`). Transactional mode's point is one DynamoDB transaction holding the
 * handler's own writes and the COMPLETED record (DESIGN §4): a record kept elsewhere cannot commit
 * in it, and two separate writes would bring back the window between effect and record that the
 * mode exists to close. Refused where the consumer (or `TransactionalIdempotency`) is made.
 */
export class TransactionalStoreError extends OncelyError {
  /** {@inheritDoc OncelyError.errorName} */
  static override readonly errorName: string = 'TransactionalStoreError';
  /** `false`: the same store is refused again; change the configuration. */
  readonly retryable = false;
  constructor(
    /** The transactional operations' namespaces (or message types) that were given the store. */
    readonly operations: readonly string[],
    /** The store's class name. */
    readonly storeName: string,
  ) {
    super(
      `transactional mode needs a DynamoDBIdempotencyStore, not a ${storeName} (${operations.join(', ')}): it ` +
        "commits the record in one DynamoDB transaction with the handler's own writes, which a record kept " +
        'elsewhere cannot join. Give the consumer a DynamoDBIdempotencyStore for them (fifoBatch and ' +
        "standardBatch's transactionalStore option, beside a Valkey store), or make them lease operations " +
        '(leaseOperation), which any store serves.',
    );
  }
}

/** Input the idempotency core cannot work with (a bad key, namespace or option). */
export class IdempotencyConfigurationError extends OncelyError {
  /** {@inheritDoc OncelyError.errorName} */
  static override readonly errorName: string = 'IdempotencyConfigurationError';
  /** `false`: the same key or option is invalid again. */
  readonly retryable = false;
}

/** An error as it is stored in a record and replayed to duplicates. */
export interface StoredError {
  /** The error's `name`: an Oncely error's `errorName`. */
  name: string;
  /** The error's `message`. */
  message: string;
}

/** Whether trying the same input again could succeed. Unknown errors are assumed transient. */
export function isRetryable(error: unknown): boolean {
  return !(error instanceof OncelyError) || error.retryable;
}

/** An error as `Name: message`, for messages that say what caused them. */
export function describeError(error: unknown): string {
  return error instanceof Error ? `${error.name}: ${error.message}` : String(error);
}

export function toStoredError(error: unknown): StoredError {
  if (error instanceof Error) return { name: error.name, message: error.message };
  return { name: 'Error', message: String(error) };
}
