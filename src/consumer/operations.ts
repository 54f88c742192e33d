import type { Context } from 'aws-lambda';
import type { z } from 'zod';
import { describeIssues } from '../common/envelope.js';
import { CompletedRecordCache } from '../idempotency/completed-cache.js';
import {
  InvalidRecordWriteError,
  OncelyError,
  RecordNotWrittenError,
  TransactionConditionFailedError,
} from '../idempotency/errors.js';
import { recordId } from '../idempotency/keys.js';
import { LeaseIdempotency, type LeaseIdempotencyOptions } from '../idempotency/lease.js';
import type { DynamoDBIdempotencyStore, Lease } from '../idempotency/store.js';
import {
  TransactionalIdempotency,
  type TransactionalIdempotencyOptions,
  type TransactionPlan,
} from '../idempotency/transactional.js';
import {
  BusinessRuleViolationError,
  IdempotencyStoreUnavailableError,
  InvalidPayloadError,
} from './errors.js';
import type { ConsumerMessage } from './message.js';
import type { ConsumerLogger, RecordTelemetry } from './telemetry.js';

/** What business code gets besides the message. */
export interface RecordContext {
  /** `namespace#key`: pass it on as an `Idempotency-Key` so an idempotent remote dedupes too. */
  idempotencyKey: string;
  /** This record's logger: every line carries its key, group and message id. */
  logger: ConsumerLogger;
  lambdaContext: Context;
}

export interface LeaseRecordContext extends RecordContext {
  /** 1 on the first run of this key, more after failures or takeovers. */
  attempt: number;
}

/** What the batch middleware gives an operation for one record. */
export interface OperationRuntime {
  store: DynamoDBIdempotencyStore;
  telemetry: RecordTelemetry;
  lambdaContext: Context;
  /** Aborted when the batch fails as a whole: a lease acquired after that is released unused. */
  signal: AbortSignal;
}

/** How an operation ended for a record that did not fail. */
export type OperationOutcome = 'executed' | 'duplicate' | 'in-doubt';

/** A per-record function with its idempotency, as `leaseOperation` and `transactionalOperation` build it. */
export interface ConsumerOperation {
  readonly namespace: string;
  /** Throws the record's failure; `IdempotencyStoreUnavailableError` when DynamoDB itself failed. */
  execute(message: ConsumerMessage, runtime: OperationRuntime): Promise<OperationOutcome>;
}

interface OperationOptions<P> {
  /** The operation, e.g. "ledger" (1–64 letters, digits, `_.:-`): keys of different namespaces never collide. */
  namespace: string;
  /**
   * Validates the payload; its problems become the rejection reason of a record sent to the DLQ.
   * None by default: the payload reaches the function unchecked.
   */
  payload?: z.ZodType<P>;
  /** The record's idempotency key (before the namespace); the message's `key` by default. */
  key?: (message: ConsumerMessage) => string;
  /**
   * LRU of completed keys answering hot duplicates without DynamoDB; `false` turns it off. By
   * default one of 1,000 keys per operation, kept for the container's life.
   */
  cache?: CompletedRecordCache | false;
}

export interface LeaseOperationOptions<P, T>
  extends OperationOptions<P>,
    Pick<LeaseIdempotencyOptions, 'mode' | 'leaseMs' | 'leaseMarginMs' | 'completionAttempts'> {
  /** The effect: any side effect. It runs at most once (at-most-once) or until it completes once. */
  run(message: ConsumerMessage<P>, context: LeaseRecordContext): Promise<T> | T;
}

export interface TransactionalOperationOptions<P, T>
  extends OperationOptions<P>,
    Pick<TransactionalIdempotencyOptions, 'contentionRetries'> {
  /** Computes the DynamoDB writes; they commit exactly once, together with the idempotency record. */
  plan(message: ConsumerMessage<P>, context: RecordContext): Promise<TransactionPlan<T>> | TransactionPlan<T>;
  /** Names the business rule behind a write whose condition failed, for the rejection reason. */
  describeViolation?(writeIndex: number, message: ConsumerMessage<P>): string | undefined;
}

/** Lease mode (DESIGN §4) for a record: acquire → run → complete. */
export function leaseOperation<P = unknown, T = unknown>(
  options: LeaseOperationOptions<P, T>,
): ConsumerOperation {
  const { namespace, mode, leaseMs, leaseMarginMs, completionAttempts } = options;
  const cache = completedCacheOf(options);
  return {
    namespace,
    async execute(message, { store, telemetry, lambdaContext, signal }) {
      const idempotency = new LeaseIdempotency({
        store,
        namespace,
        mode,
        leaseMs,
        leaseMarginMs,
        completionAttempts,
        cache,
        observer: telemetry,
      });
      const input = {
        ...idempotencyInput(message, options.key),
        context: lambdaContext,
        // At-most-once acknowledges a message whose record becomes IN_DOUBT: the record keeps it for a retry.
        message: { body: message.record.body, groupId: message.groupId },
      };
      const start = await idempotency.start<T>(input).catch((error: unknown) => {
        throw asStoreFailure(namespace, input.key, error);
      });
      if (start.status !== 'acquired') return start.status;
      const { lease } = start;
      if (signal.aborted) {
        await release(store, lease, telemetry);
        throw signal.reason;
      }
      let result: T;
      try {
        const context = {
          idempotencyKey: lease.id,
          attempt: lease.attempt,
          logger: telemetry.logger,
          lambdaContext,
        };
        result = await options.run(validated(message, options.payload), context);
      } catch (error) {
        // Throws RecordNotWrittenError when the failure cannot be recorded: then no acknowledgement.
        if ((await idempotency.recordFailure(lease, error, input.message)) === 'in-doubt') return 'in-doubt';
        throw error;
      }
      // No acknowledgement without a record (DESIGN §3): a completion that could not be written
      // fails the record, and its redelivery settles it once the lease expired.
      const completion = await idempotency.recordCompletion(lease, result);
      if (completion instanceof RecordNotWrittenError) throw completion;
      return 'executed';
    },
  };
}

/** Transactional mode (DESIGN §4) for a record: its writes and its record commit in one transaction. */
export function transactionalOperation<P = unknown, T = unknown>(
  options: TransactionalOperationOptions<P, T>,
): ConsumerOperation {
  const { namespace, contentionRetries } = options;
  const cache = completedCacheOf(options);
  return {
    namespace,
    async execute(message, { store, telemetry, lambdaContext }) {
      const idempotency = new TransactionalIdempotency({ store, namespace, cache, contentionRetries });
      const input = idempotencyInput(message, options.key);
      let planned: ConsumerMessage<P> | undefined;
      let planFailed = false;
      try {
        const outcome = await idempotency.run<T>(input, async ({ idempotencyKey }) => {
          try {
            planned = validated(message, options.payload);
            return await options.plan(planned, { idempotencyKey, logger: telemetry.logger, lambdaContext });
          } catch (error) {
            planFailed = true;
            throw error;
          }
        });
        return outcome.status;
      } catch (error) {
        if (error instanceof TransactionConditionFailedError && planned && options.describeViolation) {
          throw violation(error, planned, options.describeViolation);
        }
        if (planFailed) throw error;
        throw asStoreFailure(namespace, input.key, error);
      }
    },
  };
}

/** The operation's cache, kept for the container's life. Checks the namespace, so a bad one fails at build time. */
function completedCacheOf(options: OperationOptions<unknown>): CompletedRecordCache | false {
  recordId(options.namespace, 'probe');
  return options.cache ?? new CompletedRecordCache();
}

/**
 * The key, and what must be equal for a repeat to be a duplicate: the type too, so the same key on a
 * message of another type is a conflict, never silently skipped.
 */
function idempotencyInput(message: ConsumerMessage, key: OperationOptions<unknown>['key']) {
  return { key: key ? key(message) : message.key, payload: { type: message.type, payload: message.payload } };
}

function validated<P>(message: ConsumerMessage, schema: z.ZodType<P> | undefined): ConsumerMessage<P> {
  if (!schema) return message as ConsumerMessage<P>;
  const parsed = schema.safeParse(message.payload);
  if (!parsed.success) throw new InvalidPayloadError(message.type, describeIssues(parsed.error));
  return { ...message, payload: parsed.data };
}

/**
 * An error from a request the idempotency core made itself. Its own typed errors are the record's,
 * and so is DynamoDB refusing this record's writes as invalid; anything else is DynamoDB failing,
 * which every record of the batch would meet too.
 */
function asStoreFailure(namespace: string, key: string, error: unknown): unknown {
  if (error instanceof OncelyError) return error;
  if (error instanceof Error && error.name === 'ValidationException') {
    return new InvalidRecordWriteError(recordId(namespace, key), error);
  }
  return new IdempotencyStoreUnavailableError(recordId(namespace, key), error);
}

/**
 * Gives up a lease whose effect never started, so the redelivery runs afresh instead of finding it
 * IN_PROGRESS (and, at-most-once, parking it IN_DOUBT once it expired). Tried a few times.
 */
async function release(
  store: DynamoDBIdempotencyStore,
  lease: Lease,
  telemetry: RecordTelemetry,
): Promise<void> {
  const released = await store.releaseWithRetries(lease);
  if (released.value === true) {
    telemetry.logger.info('released the lease: the batch failed before the effect started', {
      idempotencyKey: lease.id,
    });
  } else if (released.value === false) {
    telemetry.leaseLost(lease.id, 'release');
  } else {
    telemetry.logger.error('could not release the lease; it expires on its own', {
      idempotencyKey: lease.id,
      leaseExpiresAt: new Date(lease.expiresAt).toISOString(),
      error: released.error,
    });
  }
}

function violation<P>(
  error: TransactionConditionFailedError,
  message: ConsumerMessage<P>,
  describe: (writeIndex: number, message: ConsumerMessage<P>) => string | undefined,
): BusinessRuleViolationError {
  const rules = error.failures.map(
    (failure) => describe(failure.index, message) ?? `write ${failure.index}: ${failure.code}`,
  );
  return new BusinessRuleViolationError(
    `${message.type} "${message.key}" was refused and nothing was applied: ${rules.join('; ')}`,
    { cause: error },
  );
}
