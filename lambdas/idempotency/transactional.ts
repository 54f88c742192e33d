import { setTimeout as sleep } from 'node:timers/promises';
import { TransactionCanceledException } from '@aws-sdk/client-dynamodb';
import { type KnownKeys, refuseUnknownKeys } from '../common/known-keys.js';
import { CompletedRecordCache } from './completed-cache.js';
import {
  IdempotencyConfigurationError,
  IdempotencyInProgressError,
  TransactionalStoreError,
  TransactionContentionError,
} from './errors.js';
import { judgeExistingRecord } from './existing-record.js';
import type { Delivery } from './history.js';
import { payloadHash, recordId } from './keys.js';
import { parseResult, serializeResult, tooLargeError } from './result-json.js';
import { DynamoDBIdempotencyStore, type TransactionWrite } from './store.js';

/** DynamoDB allows 100 items per transaction; one of them is the idempotency record. */
export const MAX_TRANSACTION_WRITES = 99;

/** What a transactional handler computes: its DynamoDB writes and the result duplicates replay. */
export interface TransactionPlan<T> {
  /** The writes, in `DynamoDBDocumentClient` form: at most `MAX_TRANSACTION_WRITES`. */
  writes: TransactionWrite[];
  /**
   * What the call returns, stored with the record and replayed to duplicates.
   * @default undefined
   */
  result?: T;
}

/** What `TransactionalIdempotency.run` did: committed the writes now, or found them committed. */
export type TransactionalOutcome<T> =
  | { status: 'executed'; result: T | undefined }
  | { status: 'duplicate'; result: T | undefined; fromCache: boolean };

/** How a `TransactionalIdempotency` keeps its records. */
export interface TransactionalIdempotencyOptions {
  /** The idempotency table. */
  store: DynamoDBIdempotencyStore;
  /** The operation, e.g. "ledger": keys of different namespaces never collide. */
  namespace: string;
  /**
   * LRU of COMPLETED records answering hot duplicates without DynamoDB; `false` turns it off.
   * @default a `CompletedRecordCache` of 1,000 records for this instance
   */
  cache?: CompletedRecordCache | false;
  /**
   * Retries when concurrent transactions on the same items cancel this one.
   * @default 3
   */
  contentionRetries?: number;
}

const TRANSACTIONAL_IDEMPOTENCY_OPTION_KEYS = {
  store: true,
  namespace: true,
  cache: true,
  contentionRetries: true,
} satisfies KnownKeys<TransactionalIdempotencyOptions>;

/**
 * Transactional mode (DESIGN §4), for effects that are DynamoDB writes: the writes and the
 * COMPLETED record commit in one TransactWriteItems. Exactly-once, no lease, one request. In an
 * SQS consumer, `transactionalOperation` (`oncely/consumer`) drives it for you.
 *
 * @example
 * ```ts
 * const ledger = new TransactionalIdempotency({ store, namespace: 'ledger' });
 * await ledger.run({ key: payment.id, payload: payment }, () => ({
 *   writes: [{ Update: { TableName: 'ledger', Key: { id: payment.account }, UpdateExpression: 'ADD balance :c', ExpressionAttributeValues: { ':c': payment.cents } } }],
 *   result: { applied: payment.cents },
 * }));
 * ```
 */
export class TransactionalIdempotency {
  readonly #options: TransactionalIdempotencyOptions;
  readonly #cache: CompletedRecordCache | undefined;

  constructor(options: TransactionalIdempotencyOptions) {
    refuseUnknownKeys('new TransactionalIdempotency()', options, TRANSACTIONAL_IDEMPOTENCY_OPTION_KEYS);
    recordId(options.namespace, 'probe'); // fail fast on a bad namespace
    // From JavaScript, a Valkey store would get this far: refused here rather than at the first commit.
    if (!((options.store as unknown) instanceof DynamoDBIdempotencyStore)) {
      throw new TransactionalStoreError([options.namespace], storeName(options.store));
    }
    this.#options = options;
    this.#cache = options.cache === false ? undefined : (options.cache ?? new CompletedRecordCache());
  }

  /**
   * Commits `plan`'s writes once per key, with the record; a duplicate gets the stored result.
   * Throws `TransactionConditionFailedError` when a write's own condition failed (nothing is
   * written) and `IdempotencyConflictError` for the same key with another payload.
   */
  async run<T>(
    input: { key: string; payload: unknown; delivery?: Delivery },
    plan: (context: { idempotencyKey: string }) => Promise<TransactionPlan<T>> | TransactionPlan<T>,
  ): Promise<TransactionalOutcome<T>> {
    const { store } = this.#options;
    const id = recordId(this.#options.namespace, input.key);
    const hash = payloadHash(input.payload);
    const cached = this.#cache?.duplicateOf(id, hash, store.now());
    if (cached) return { status: 'duplicate', result: parseResult<T>(cached.result), fromCache: true };

    const { writes, result } = await plan({ idempotencyKey: id });
    if (writes.length > MAX_TRANSACTION_WRITES) {
      throw new IdempotencyConfigurationError(
        `"${id}": ${writes.length} writes do not fit one transaction with the idempotency record ` +
          `(at most ${MAX_TRANSACTION_WRITES}). Split the effect, or use lease mode.`,
      );
    }
    // Unlike lease mode, nothing has happened yet: an unstorable result is refused up front.
    const serialized = serializeResult(result);
    const tooLarge = tooLargeError(id, serialized);
    if (tooLarge) throw tooLarge;

    const outcome = await this.#commitWithRetries(
      { id, payloadHash: hash, result: serialized.result, writes },
      input.delivery,
    );
    if (outcome.committed) {
      this.#cache?.set(id, {
        payloadHash: hash,
        result: serialized.result,
        expiresAtMs: outcome.recordExpiresAt * 1000,
      });
      return { status: 'executed', result };
    }
    const verdict = judgeExistingRecord(outcome.existing, hash, store.now());
    if (verdict.kind !== 'completed') throw new IdempotencyInProgressError(id, store.now());
    // Only a lease-mode record sharing the namespace can hold a result too large to replay.
    if (verdict.resultBytes !== undefined) throw tooLargeError(id, verdict);
    // A COMPLETED record always has an expiry; one without (only unresolved records) is never cached.
    if (outcome.existing.expiresAt !== undefined) {
      this.#cache?.set(id, {
        payloadHash: hash,
        result: verdict.result,
        expiresAtMs: outcome.existing.expiresAt * 1000,
      });
    }
    return { status: 'duplicate', result: parseResult<T>(verdict.result), fromCache: false };
  }

  async #commitWithRetries(
    commit: { id: string; payloadHash: string; result: string | undefined; writes: TransactionWrite[] },
    delivery: Delivery | undefined,
  ) {
    const { store, contentionRetries = 3 } = this.#options;
    const { id } = commit;
    for (let attempt = 0; ; attempt++) {
      try {
        return await store.commitTransaction({ ...commit, delivery });
      } catch (error) {
        if (!isContention(error)) throw error;
        if (attempt >= contentionRetries) throw new TransactionContentionError(id, attempt + 1);
        await sleep(20 * 2 ** attempt * (0.5 + Math.random()));
      }
    }
  }
}

function isContention(error: unknown): boolean {
  return (
    error instanceof TransactionCanceledException &&
    (error.CancellationReasons ?? []).some((reason) => reason.Code === 'TransactionConflict')
  );
}

/** A store's class name, for the error that refuses it. */
export function storeName(store: unknown): string {
  return (store as { constructor?: { name?: string } } | undefined)?.constructor?.name ?? String(store);
}
