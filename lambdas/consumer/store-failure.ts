import { InvalidRecordWriteError, isStoreFailure, OncelyError } from '../idempotency/errors.js';
import { recordId } from '../idempotency/keys.js';
import { IdempotencyStoreUnavailableError } from './errors.js';

/**
 * An error from a request the idempotency core made itself. Its own typed errors are the record's,
 * and so is DynamoDB refusing this record's writes as invalid; anything else is the store failing,
 * which every record of the batch would meet too: a Valkey write too few replicas acknowledged as
 * well, for the replicas every record's writes wait for are the same.
 */
export function asStoreFailure(namespace: string, key: string, error: unknown): unknown {
  if (error instanceof OncelyError && !isStoreFailure(error)) return error;
  if (error instanceof Error && error.name === 'ValidationException') {
    return new InvalidRecordWriteError(recordId(namespace, key), error);
  }
  return new IdempotencyStoreUnavailableError(recordId(namespace, key), error);
}
