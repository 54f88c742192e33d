import type { Context } from 'aws-lambda';
import { type KnownKeys, refuseUnknownKeys } from '../common/known-keys.js';
import { describeIssues, type StandardSchemaV1 } from '../common/standard-schema.js';
import { CompletedRecordCache } from '../idempotency/completed-cache.js';
import { TransactionConditionFailedError } from '../idempotency/errors.js';
import type { Delivery } from '../idempotency/history.js';
import { assertOperationNamespace, recordId } from '../idempotency/keys.js';
import { LeaseCore, type LeaseIdempotencyOptions } from '../idempotency/lease.js';
import type { KeptMessage } from '../idempotency/record.js';
import type { DynamoDBIdempotencyStore } from '../idempotency/store.js';
import {
  TransactionalIdempotency,
  type TransactionalIdempotencyOptions,
  type TransactionPlan,
} from '../idempotency/transactional.js';
import { BusinessRuleViolationError, InvalidPayloadError } from './errors.js';
import { LeaseTurn } from './lease-turn.js';
import type { ConsumerMessage } from './message.js';
import type { OperationOutcome, OperationRuntime } from './operation-runtime.js';
import { recordTraceContext } from './record-trace.js';
import { asStoreFailure } from './store-failure.js';
import type { ConsumerLogger } from './telemetry.js';

/** What business code gets besides the message. */
export interface RecordContext {
  /** `namespace#key`: pass it on as an `Idempotency-Key` so an idempotent remote dedupes too. */
  idempotencyKey: string;
  /** This record's logger: every line carries its key, group and message id. */
  logger: ConsumerLogger;
  /** The invocation's Lambda context. */
  lambdaContext: Context;
}

/** What a lease operation's `run` is told: `RecordContext` and the attempt. */
export interface LeaseRecordContext extends RecordContext {
  /** 1 on the first run of this key, more after failures or takeovers. */
  attempt: number;
}

/** A per-record function with its idempotency, as `leaseOperation` and `transactionalOperation` build it. */
export interface ConsumerOperation {
  /** The operation's namespace: its records' ids are `namespace#key`. */
  readonly namespace: string;
  /** The id of the message's idempotency record, `namespace#key` (DESIGN §2). @internal */
  recordIdOf(message: ConsumerMessage): string;
  /**
   * Set on a transactional operation: it needs a `DynamoDBIdempotencyStore` (`TransactionalStoreError`).
   * @internal
   */
  readonly transactional?: true;
  /** Throws the record's failure; `IdempotencyStoreUnavailableError` when DynamoDB itself failed. @internal */
  execute(message: ConsumerMessage, runtime: OperationRuntime): Promise<OperationOutcome>;
}

/** What `leaseOperation` and `transactionalOperation` both take. */
export interface OperationOptions<P> {
  /** The operation, e.g. "ledger" (1–64 letters, digits, `_.:-`): keys of different namespaces never collide. */
  namespace: string;
  /**
   * Validates the payload: any Standard Schema (zod or zod/mini, Valibot, ArkType…). Its problems
   * become the rejection reason of a record sent to the DLQ.
   * @default none: the payload reaches the function unchecked
   */
  payload?: StandardSchemaV1<unknown, P>;
  /**
   * The record's idempotency key (before the namespace).
   * @default the message's `key`
   */
  key?: (message: ConsumerMessage) => string;
  /**
   * LRU of completed keys answering hot duplicates without DynamoDB; `false` turns it off.
   * @default a `CompletedRecordCache` of 1,000 keys per operation, kept for the container's life
   */
  cache?: CompletedRecordCache | false;
}

/**
 * A lease-mode operation: its effect, and `LeaseIdempotencyOptions`' `mode`, `leaseMs`,
 * `leaseMarginMs` and `completionAttempts` (see there for their defaults).
 */
export interface LeaseOperationOptions<P, T>
  extends OperationOptions<P>,
    Pick<LeaseIdempotencyOptions, 'mode' | 'leaseMs' | 'leaseMarginMs' | 'completionAttempts'> {
  /** The effect: any side effect. It runs at most once (at-most-once) or until it completes once. */
  run(message: ConsumerMessage<P>, context: LeaseRecordContext): Promise<T> | T;
}

/**
 * A transactional operation: its writes, and `TransactionalIdempotencyOptions`'
 * `contentionRetries` (see there for its default).
 */
export interface TransactionalOperationOptions<P, T>
  extends OperationOptions<P>,
    Pick<TransactionalIdempotencyOptions, 'contentionRetries'> {
  /** Computes the DynamoDB writes; they commit exactly once, together with the idempotency record. */
  plan(message: ConsumerMessage<P>, context: RecordContext): Promise<TransactionPlan<T>> | TransactionPlan<T>;
  /** Names the business rule behind a write whose condition failed, for the rejection reason. */
  describeViolation?(writeIndex: number, message: ConsumerMessage<P>): string | undefined;
}

const OPERATION_OPTION_KEYS = { namespace: true, payload: true, key: true, cache: true } satisfies KnownKeys<
  OperationOptions<unknown>
>;

const LEASE_OPERATION_OPTION_KEYS = {
  ...OPERATION_OPTION_KEYS,
  mode: true,
  leaseMs: true,
  leaseMarginMs: true,
  completionAttempts: true,
  run: true,
} satisfies KnownKeys<LeaseOperationOptions<unknown, unknown>>;

const TRANSACTIONAL_OPERATION_OPTION_KEYS = {
  ...OPERATION_OPTION_KEYS,
  contentionRetries: true,
  plan: true,
  describeViolation: true,
} satisfies KnownKeys<TransactionalOperationOptions<unknown, unknown>>;

/**
 * Lease mode (DESIGN §4) for a record: acquire → run → complete. For any side effect (an e-mail, a
 * payment API); `mode` says what happens when an invocation dies mid-effect.
 *
 * @example
 * ```ts
 * const welcome = leaseOperation({
 *   namespace: 'welcome',
 *   mode: 'at-least-once',
 *   payload: z.object({ email: z.email() }),
 *   run: async ({ payload }, { idempotencyKey }) => {
 *     const response = await fetch(mailApi, { method: 'POST', headers: { 'Idempotency-Key': idempotencyKey }, body: JSON.stringify(payload) });
 *     if (response.status === 400) throw new NonRetryableError('the mail API refused it');
 *   },
 * });
 * ```
 */
export function leaseOperation<P = unknown, T = unknown>(
  options: LeaseOperationOptions<P, T>,
): ConsumerOperation {
  refuseUnknownKeys('leaseOperation()', options, LEASE_OPERATION_OPTION_KEYS);
  return new LeaseOperation(options);
}

/**
 * What `leaseOperation` builds. On its own (`execute`) a record takes its lease, runs, and is
 * recorded; in a FIFO batch, the consumer takes a group's leases together and overlaps each
 * record's completion with the next record's turn (`turn`, see `LeaseTurn` and `GroupLeases`).
 */
export class LeaseOperation<P = unknown, T = unknown> implements ConsumerOperation {
  readonly namespace: string;
  readonly #options: LeaseOperationOptions<P, T>;
  readonly #cache: CompletedRecordCache | false;

  constructor(options: LeaseOperationOptions<P, T>) {
    this.namespace = options.namespace;
    this.#options = options;
    this.#cache = completedCacheOf(options);
  }

  recordIdOf(message: ConsumerMessage): string {
    return recordId(this.namespace, idempotencyInput(message, this.#options.key).key);
  }

  /** The record's turn, its lease not taken yet. */
  turn(message: ConsumerMessage, runtime: OperationRuntime): LeaseTurn {
    const { namespace, mode, leaseMs, leaseMarginMs, completionAttempts, payload, run } = this.#options;
    const { store, telemetry, lambdaContext } = runtime;
    // The core, not LeaseIdempotency: its telemetry is the observer, and it never calls `run`.
    const idempotency = new LeaseCore(
      { store, namespace, mode, leaseMs, leaseMarginMs, completionAttempts, cache: this.#cache },
      telemetry,
    );
    const input = {
      ...idempotencyInput(message, this.#options.key),
      context: lambdaContext,
      // At-most-once acknowledges a message whose record becomes IN_DOUBT: the record keeps it for a retry.
      message: keptMessage(message),
      delivery: deliveryOf(message),
    };
    return new LeaseTurn({
      namespace,
      idempotency,
      input,
      messageId: message.messageId,
      runtime,
      effect: async (lease) =>
        run(await validated(message, payload), {
          idempotencyKey: lease.id,
          attempt: lease.attempt,
          logger: telemetry.logger,
          lambdaContext,
        }),
    });
  }

  async execute(message: ConsumerMessage, runtime: OperationRuntime): Promise<OperationOutcome> {
    const step = await this.turn(message, runtime).run(async () => undefined);
    return typeof step === 'string' ? step : step.settling;
  }
}

/**
 * Transactional mode (DESIGN §4) for a record: its writes and its record commit in one
 * transaction, exactly once. For effects that are DynamoDB writes.
 *
 * @example
 * ```ts
 * const ledger = transactionalOperation({
 *   namespace: 'ledger',
 *   plan: ({ payload }) => ({
 *     writes: [{ Update: { TableName: 'ledger', Key: { id: payload.account }, UpdateExpression: 'ADD balance :c', ExpressionAttributeValues: { ':c': payload.cents } } }],
 *   }),
 * });
 * ```
 */
export function transactionalOperation<P = unknown, T = unknown>(
  options: TransactionalOperationOptions<P, T>,
): ConsumerOperation {
  refuseUnknownKeys('transactionalOperation()', options, TRANSACTIONAL_OPERATION_OPTION_KEYS);
  const { namespace, contentionRetries } = options;
  const cache = completedCacheOf(options);
  return {
    namespace,
    transactional: true,
    recordIdOf(message) {
      return recordId(namespace, idempotencyInput(message, options.key).key);
    },
    async execute(message, { store: leaseStore, transactionalStore, telemetry, lambdaContext }) {
      // The consumer refused another store when it was made (`refuseTransactionalStore`), and
      // TransactionalIdempotency refuses one too (`TransactionalStoreError`, naming this namespace).
      const store = (transactionalStore ?? leaseStore) as DynamoDBIdempotencyStore;
      const idempotency = new TransactionalIdempotency({ store, namespace, cache, contentionRetries });
      const input = { ...idempotencyInput(message, options.key), delivery: deliveryOf(message) };
      let planned: ConsumerMessage<P> | undefined;
      let planFailed = false;
      try {
        const outcome = await idempotency.run<T>(input, async ({ idempotencyKey }) => {
          try {
            planned = await validated(message, options.payload);
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
  assertOperationNamespace(options.namespace);
  return options.cache ?? new CompletedRecordCache();
}

/**
 * The key, and what must be equal for a repeat to be a duplicate: the type too, so the same key on a
 * message of another type is a conflict, never silently skipped.
 */
function idempotencyInput(message: ConsumerMessage, key: OperationOptions<unknown>['key']) {
  return { key: key ? key(message) : message.key, payload: { type: message.type, payload: message.payload } };
}

async function validated<P>(
  message: ConsumerMessage,
  schema: StandardSchemaV1<unknown, P> | undefined,
): Promise<ConsumerMessage<P>> {
  if (!schema) return message as ConsumerMessage<P>;
  const result = await schema['~standard'].validate(message.payload);
  if (result.issues) throw new InvalidPayloadError(message.type, describeIssues(result.issues));
  return { ...message, payload: result.value };
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

/** What the record's history says of the delivery (DESIGN §3). */
function deliveryOf(message: ConsumerMessage): Delivery {
  return {
    messageId: message.messageId,
    ...(Number.isFinite(message.receiveCount) ? { receiveCount: message.receiveCount } : {}),
    publishedAt: message.publishedAt,
  };
}

/** What an at-most-once record keeps of its message, for a retry an operator may decide on. */
function keptMessage(message: ConsumerMessage): KeptMessage {
  const traceContext = recordTraceContext(message.record);
  return { body: message.record.body, groupId: message.groupId, ...(traceContext ? { traceContext } : {}) };
}
