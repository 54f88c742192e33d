/**
 * Errors of the operations commands (`oncely dlq`, `oncely in-doubt`, `oncely outbox`). Each message
 * says what happened and what to do; `bin/oncely.ts` prints it and exits with 1. Names are fixed
 * strings, so a minified bundle still reports them.
 */

/** The sandbox's ready file is missing, unreadable or not a ready file. */
export class ReadyFileError extends Error {
  override readonly name = 'ReadyFileError';
}

/** Nothing answers at one of the target's endpoints. */
export class PipelineUnreachableError extends Error {
  override readonly name = 'PipelineUnreachableError';
}

/** The AWS SDK found no credentials for a deployed stack. */
export class MissingCredentialsError extends Error {
  override readonly name = 'MissingCredentialsError';
}

/** The stack to operate on does not exist (in this account and region). */
export class StackNotFoundError extends Error {
  override readonly name = 'StackNotFoundError';
}

/** No idempotency record has this id (or it expired). */
export class UnknownRecordError extends Error {
  override readonly name = 'UnknownRecordError';
}

/** The record exists but is neither IN_DOUBT nor pending a retry, so there is nothing to resolve. */
export class RecordNotInDoubtError extends Error {
  override readonly name = 'RecordNotInDoubtError';
}

/** The record changed between this command's read and its write: someone else got there first. */
export class ResolutionConflictError extends Error {
  override readonly name = 'ResolutionConflictError';
}

/** An IN_DOUBT record without its message cannot be sent again from here. */
export class MessageNotKeptError extends Error {
  override readonly name = 'MessageNotKeptError';
}

/** `--as retry` could not send the message; the record is RETRY_PENDING and keeps it. */
export class ResendFailedError extends Error {
  override readonly name = 'ResendFailedError';
}

/** The pipeline's idempotency TTL is not a number of seconds, so the dedup horizon is unknown. */
export class DedupHorizonUnknownError extends Error {
  override readonly name = 'DedupHorizonUnknownError';
}

/** A redrive stopped half-way: a send or a delete failed. What was not moved is still in the DLQ. */
export class RedriveInterruptedError extends Error {
  override readonly name = 'RedriveInterruptedError';
}

/** The target has no OncelyOutbox: none of its stack outputs is an outbox's table name. */
export class NoOutboxError extends Error {
  override readonly name = 'NoOutboxError';
}

/** The target has several OncelyOutboxes, and the command line does not say which one. */
export class SeveralOutboxesError extends Error {
  override readonly name = 'SeveralOutboxesError';
}
