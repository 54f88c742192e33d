/**
 * Errors of the operations commands (`oncely dlq`, `oncely in-doubt`, `oncely outbox`). Each message
 * says what happened and what to do; `bin/oncely.ts` prints it and exits with 1. Each fixes its
 * name in a static `errorName`, as every Oncely error does, so a minified bundle still reports it.
 */
import { OncelyError } from '../lambdas/common/oncely-error.js';

/** The sandbox's ready file is missing, unreadable or not a ready file. */
export class ReadyFileError extends OncelyError {
  static override readonly errorName: string = 'ReadyFileError';
  readonly retryable = false;
}

/** Nothing answers at one of the target's endpoints. */
export class PipelineUnreachableError extends OncelyError {
  static override readonly errorName: string = 'PipelineUnreachableError';
  readonly retryable = true;
}

/** The AWS SDK found no credentials for a deployed stack. */
export class MissingCredentialsError extends OncelyError {
  static override readonly errorName: string = 'MissingCredentialsError';
  readonly retryable = false;
}

/** The stack to operate on does not exist (in this account and region). */
export class StackNotFoundError extends OncelyError {
  static override readonly errorName: string = 'StackNotFoundError';
  readonly retryable = false;
}

/** No idempotency record has this id (or it expired). */
export class UnknownRecordError extends OncelyError {
  static override readonly errorName: string = 'UnknownRecordError';
  readonly retryable = false;
}

/** The record exists but is neither IN_DOUBT nor pending a retry, so there is nothing to resolve. */
export class RecordNotInDoubtError extends OncelyError {
  static override readonly errorName: string = 'RecordNotInDoubtError';
  readonly retryable = false;
}

/** The record changed between this command's read and its write: someone else got there first. */
export class ResolutionConflictError extends OncelyError {
  static override readonly errorName: string = 'ResolutionConflictError';
  readonly retryable = true;
}

/** An IN_DOUBT record without its message cannot be sent again from here. */
export class MessageNotKeptError extends OncelyError {
  static override readonly errorName: string = 'MessageNotKeptError';
  readonly retryable = false;
}

/** `--as retry` could not send the message; the record is RETRY_PENDING and keeps it. */
export class ResendFailedError extends OncelyError {
  static override readonly errorName: string = 'ResendFailedError';
  readonly retryable = true;
}

/** `--as retry` would send a message past the dedup horizon: the consumer would dead-letter it unrun. */
export class RetryPastHorizonError extends OncelyError {
  static override readonly errorName: string = 'RetryPastHorizonError';
  readonly retryable = false;
}

/** The pipeline's idempotency TTL is not a number of seconds, so the dedup horizon is unknown. */
export class DedupHorizonUnknownError extends OncelyError {
  static override readonly errorName: string = 'DedupHorizonUnknownError';
  readonly retryable = false;
}

/** A redrive stopped half-way: a send or a delete failed. What was not moved is still in the DLQ. */
export class RedriveInterruptedError extends OncelyError {
  static override readonly errorName: string = 'RedriveInterruptedError';
  readonly retryable = true;
}

/** The target has no OncelyOutbox: none of its stack outputs is an outbox's table name. */
export class NoOutboxError extends OncelyError {
  static override readonly errorName: string = 'NoOutboxError';
  readonly retryable = false;
}

/** The target has several OncelyOutboxes, and the command line does not say which one. */
export class SeveralOutboxesError extends OncelyError {
  static override readonly errorName: string = 'SeveralOutboxesError';
  readonly retryable = false;
}

/** `dlq discard` recorded messages but could not delete them from the DLQ. */
export class DiscardInterruptedError extends OncelyError {
  static override readonly errorName: string = 'DiscardInterruptedError';
  readonly retryable = true;
}

/** Another `dlq redrive` holds the DLQ's redrive lease: two at once would redrive each other's returns. */
export class RedriveInProgressError extends OncelyError {
  static override readonly errorName: string = 'RedriveInProgressError';
  readonly retryable = true;
}

/** An `oncely in-doubt list --after` value that is not the `next` of a page it printed. */
export class InvalidPageTokenError extends OncelyError {
  static override readonly errorName: string = 'InvalidPageTokenError';
  readonly retryable = false;
}

/**
 * The stack keeps its lease records in a Valkey cache inside its VPC (`leaseRecords: 'valkey'`), and
 * the command line names no way in: `--valkey-endpoint HOST:PORT`, a tunnel to the cache.
 */
export class ValkeyEndpointRequiredError extends OncelyError {
  static override readonly errorName: string = 'ValkeyEndpointRequiredError';
  readonly retryable = false;
}

/** The pipeline keeps its lease records in Valkey, and the optional peer `iovalkey` cannot be imported. */
export class ValkeyClientMissingError extends OncelyError {
  static override readonly errorName: string = 'ValkeyClientMissingError';
  readonly retryable = false;
}
