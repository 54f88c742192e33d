import type { SQSRecord } from 'aws-lambda';
import { PAST_DEDUP_HORIZON } from '../common/dedup-horizon.js';
import { describeError, NonRetryableError, OncelyError } from '../idempotency/errors.js';

/** No operation is registered for the message's type: no retry can change that. */
export class UnknownMessageTypeError extends NonRetryableError {
  /** {@inheritDoc OncelyError.errorName} */
  static override readonly errorName: string = 'UnknownMessageTypeError';
  constructor(
    /** The message's type, as its envelope names it. */
    readonly type: string,
    knownTypes: readonly string[],
  ) {
    super(
      `no operation handles message type "${type}" (this consumer handles ${knownTypes.join(', ') || 'no type'}). ` +
        'Register an operation for it, or stop publishing it to this queue; then redrive the message.',
    );
  }
}

/**
 * The consumer's `parse` failed on a record's body. Its body never changes, so no retry can help:
 * the record goes to the DLQ at once, as a body that is not an Oncely envelope does.
 */
export class UnparsableMessageError extends NonRetryableError {
  /** {@inheritDoc OncelyError.errorName} */
  static override readonly errorName: string = 'UnparsableMessageError';
  constructor(record: SQSRecord, cause: unknown) {
    super(
      `message ${record.messageId} could not be parsed (${describeError(cause)}). Fix the parser or the ` +
        'producer, then redrive the message.',
      { cause },
    );
  }
}

/**
 * A record failed `maxAttempts` times in a row with retryable errors (DESIGN §5): the consumer
 * sends it to the DLQ in its group, so that its group goes on, instead of leaving it to SQS's
 * `maxReceiveCount`, which would take the records skipped behind it there too. Its message names
 * the last error; a redriven copy gets `maxAttempts` attempts afresh.
 */
export class AttemptsExhaustedError extends NonRetryableError {
  /** {@inheritDoc OncelyError.errorName} */
  static override readonly errorName: string = 'AttemptsExhaustedError';
  constructor(
    /** The failed runs counted: since the key was last dead-lettered, or its receives (transactional). */
    readonly attempts: number,
    cause: unknown,
  ) {
    super(
      `failed ${attempts} times, the last with ${describeError(cause)}. Fix the cause, then redrive the message: ` +
        'it gets maxAttempts attempts afresh.',
      { cause },
    );
  }
}

/** The payload does not match its operation's schema. */
export class InvalidPayloadError extends NonRetryableError {
  /** {@inheritDoc OncelyError.errorName} */
  static override readonly errorName: string = 'InvalidPayloadError';
  constructor(type: string, problems: string) {
    super(`the ${type} payload is invalid: ${problems}. Fix the producer, then publish a corrected message.`);
  }
}

/** A business write's condition failed (e.g. stock would go below zero): the message is refused for good. */
export class BusinessRuleViolationError extends NonRetryableError {
  /** {@inheritDoc OncelyError.errorName} */
  static override readonly errorName: string = 'BusinessRuleViolationError';
}

/**
 * A record without a MessageGroupId: the consumer is attached to a standard queue, not a FIFO one,
 * so nothing guarantees the order it relies on. This fails the whole batch.
 */
export class MissingMessageGroupError extends OncelyError {
  /** {@inheritDoc OncelyError.errorName} */
  static override readonly errorName: string = 'MissingMessageGroupError';
  /** `false`: a standard queue never gives its records a group; attach the consumer to a FIFO queue. */
  readonly retryable = false;
  constructor(
    /** The SQS message ID of the record without a group. */
    readonly messageId: string,
  ) {
    super(
      `message ${messageId} has no MessageGroupId: this consumer must read a FIFO queue (*.fifo). ` +
        'Attach it to the FIFO queue, or remove the event source mapping.',
    );
  }
}

/**
 * The idempotency store failed a request the core made for a record: DynamoDB (unreachable,
 * missing table, throttled, access denied) or Valkey (unreachable, or a write too few replicas
 * acknowledged, `RecordNotReplicatedError`). Every record needs that store, so this fails the
 * whole batch.
 */
export class IdempotencyStoreUnavailableError extends OncelyError {
  /** {@inheritDoc OncelyError.errorName} */
  static override readonly errorName: string = 'IdempotencyStoreUnavailableError';
  /** `true`: the store may answer the next delivery. */
  readonly retryable = true;
  constructor(idempotencyKey: string, cause: unknown) {
    super(
      `the idempotency store failed while recording "${idempotencyKey}" (${describeError(cause)}); nothing is ` +
        'acknowledged on it. Check that the store is reachable (DynamoDB: the tables exist and the function may use ' +
        'them; Valkey: the server and its replicas): the whole batch fails so that SQS redelivers it.',
      { cause },
    );
  }
}

/**
 * The message was published longer ago than the dedup horizon (DESIGN §2): its idempotency record,
 * if it ever had one, may have expired, so it cannot be told apart from a new message. It is never
 * run; its name is the DLQ reason `PastDedupHorizon`.
 */
export class PastDedupHorizonError extends NonRetryableError {
  /** `PastDedupHorizon`, not the class's name: the DLQ reason that deployed queues already carry. */
  static override readonly errorName: string = PAST_DEDUP_HORIZON;
  constructor(publishedAt: string, ttlSeconds: number) {
    super(
      `the message was published at ${publishedAt}, past the dedup horizon (records live ${ttlSeconds} s): it can ` +
        'no longer be told apart from a message never processed, so it is not run. If it must run, publish it again ' +
        'as a new message with a new key.',
    );
  }
}

/**
 * `fifoBatch` got a record from a standard or fair queue (an ARN not ending in `.fifo`): a fair
 * queue's records carry a `MessageGroupId`, its tenant, which fifoBatch would take for a FIFO group
 * and order by, though SQS neither orders nor deduplicates them. This fails the whole batch.
 */
export class StandardQueueRecordError extends OncelyError {
  /** {@inheritDoc OncelyError.errorName} */
  static override readonly errorName: string = 'StandardQueueRecordError';
  /** `false`: the consumer is attached to the wrong queue; use `standardBatch` for a standard or fair queue. */
  readonly retryable = false;
  constructor(
    /** The SQS message ID of the record from a standard queue. */
    readonly messageId: string,
    /** The queue's ARN, as the record names it. */
    readonly eventSourceArn: string,
  ) {
    super(
      `message ${messageId} comes from the standard queue ${eventSourceArn}: fifoBatch keeps message groups in ` +
        'order, which a standard or fair queue has not, and relies on its deduplication. Use standardBatch there.',
    );
  }
}

/**
 * `standardBatch` got a record from a FIFO queue: it runs records in no order, which would break
 * the queue's message groups. This fails the whole batch.
 */
export class FifoQueueRecordError extends OncelyError {
  /** {@inheritDoc OncelyError.errorName} */
  static override readonly errorName: string = 'FifoQueueRecordError';
  /** `false`: the consumer is attached to the wrong queue; use `fifoBatch` for a FIFO queue. */
  readonly retryable = false;
  constructor(
    /** The SQS message ID of the record from a FIFO queue. */
    readonly messageId: string,
    /** The queue's ARN, as the record names it. */
    readonly eventSourceArn: string,
  ) {
    super(
      `message ${messageId} comes from the FIFO queue ${eventSourceArn}: standardBatch runs records in no order and ` +
        'would break its message groups. Use fifoBatch for a FIFO queue.',
    );
  }
}
