import { describe, expect, it } from 'vitest';
import { IdempotencyStoreUnavailableError } from '../../lambdas/consumer/errors.js';
import { asStoreFailure } from '../../lambdas/consumer/store-failure.js';
import {
  IdempotencyInProgressError,
  InvalidRecordWriteError,
  RecordNotReplicatedError,
} from '../../lambdas/idempotency/errors.js';

// The core's own errors are the record's; a Valkey write too few replicas acknowledged is the
// store's, like any other error of the store's, and fails the whole batch.
describe('asStoreFailure', () => {
  it("keeps the core's own errors: they are the record's", () => {
    const held = new IdempotencyInProgressError('mail#k', 0);
    expect(asStoreFailure('mail', 'k', held)).toBe(held);
  });

  it("makes a write too few replicas acknowledged the store's failure, as a subclass of it too", () => {
    class Lagging extends RecordNotReplicatedError {}
    for (const error of [
      new RecordNotReplicatedError('mail#k', 0, 1, 100),
      new Lagging('mail#k', 0, 1, 100),
    ]) {
      const failure = asStoreFailure('mail', 'k', error);
      expect(failure).toBeInstanceOf(IdempotencyStoreUnavailableError);
      expect((failure as Error).cause).toBe(error);
    }
  });

  it("makes DynamoDB's ValidationException the record's, and anything else the store's", () => {
    const invalid = Object.assign(new Error('too large'), { name: 'ValidationException' });
    expect(asStoreFailure('mail', 'k', invalid)).toBeInstanceOf(InvalidRecordWriteError);
    expect(asStoreFailure('mail', 'k', new Error('reset'))).toBeInstanceOf(IdempotencyStoreUnavailableError);
    expect(asStoreFailure('mail', 'k', 'thrown')).toBeInstanceOf(IdempotencyStoreUnavailableError);
  });
});
