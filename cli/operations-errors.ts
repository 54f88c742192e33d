/**
 * Errors of the operations commands (`oncely dlq`, `oncely in-doubt`). Each message says what
 * happened and what to do; `bin/oncely.ts` prints it and exits with 1.
 */
export abstract class OperationsError extends Error {
  constructor(message: string, options?: ErrorOptions) {
    super(message, options);
    this.name = new.target.name;
  }
}

/** The sandbox's ready file is missing, unreadable or not a ready file. */
export class ReadyFileError extends OperationsError {}

/** Nothing answers at one of the target's endpoints. */
export class PipelineUnreachableError extends OperationsError {}

/** The AWS SDK found no credentials for a deployed stack. */
export class MissingCredentialsError extends OperationsError {}

/** The stack to operate on does not exist (in this account and region). */
export class StackNotFoundError extends OperationsError {}

/** No idempotency record has this id (or it expired). */
export class UnknownRecordError extends OperationsError {}

/** The record exists but is not IN_DOUBT, so there is nothing to resolve. */
export class RecordNotInDoubtError extends OperationsError {}

/** An IN_DOUBT record without its message cannot be sent again from here. */
export class MessageNotKeptError extends OperationsError {}

/** `--as retry` deleted the record but could not send its message. */
export class ResendFailedError extends OperationsError {}

/** A message move task is already running on the DLQ; SQS allows one at a time. */
export class MoveTaskAlreadyRunningError extends OperationsError {}

/** The redrive's message move task failed or was cancelled. */
export class MoveTaskFailedError extends OperationsError {}
