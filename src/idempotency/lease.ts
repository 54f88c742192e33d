import { RECORD_WRITE_RETRY, retried } from '../common/backoff.js';
import { CompletedRecordCache } from './completed-cache.js';
import {
  IdempotencyInProgressError,
  isRetryable,
  OutcomeUnknownError,
  RecordNotWrittenError,
  type StoredError,
  toStoredError,
} from './errors.js';
import { judgeExistingRecord } from './existing-record.js';
import { payloadHash, recordId } from './keys.js';
import { consoleObserver, type IdempotencyObserver } from './observer.js';
import type { KeptMessage } from './record.js';
import { parseResult, serializeResult, tooLargeError } from './result-json.js';
import type { DynamoDBIdempotencyStore, Lease } from './store.js';

export type IdempotencyMode = 'at-least-once' | 'at-most-once';

/** The part of the Lambda context the lease is sized from. */
export interface RemainingTime {
  getRemainingTimeInMillis(): number;
}

export interface LeaseIdempotencyOptions {
  store: DynamoDBIdempotencyStore;
  /** The operation, e.g. "notifications": keys of different namespaces never collide. */
  namespace: string;
  /** What happens when a lease expires without completion: re-run (at-least-once) or IN_DOUBT (at-most-once). */
  mode: IdempotencyMode;
  /**
   * Minimum lease in milliseconds. With a Lambda context the lease is at least its remaining time
   * plus the margin; without one it is this, by default Lambda's 15-minute maximum.
   */
  leaseMs?: number;
  /** Added to the Lambda context's remaining time, for the record writes after the effect; 2 s by default. */
  leaseMarginMs?: number;
  /**
   * LRU of COMPLETED records answering hot duplicates without DynamoDB; `false` turns it off. By
   * default one of 1,000 records for this instance.
   */
  cache?: CompletedRecordCache | false;
  /**
   * Told what the core reports without throwing (a completion not written, a lease lost, a record
   * IN_DOUBT). By default JSON lines on stderr.
   */
  observer?: IdempotencyObserver;
  /**
   * How often a record write after the effect (COMPLETED, FAILED, REJECTED, IN_DOUBT) is tried
   * before giving up, on top of the AWS SDK's own retries; 3 by default.
   */
  completionAttempts?: number;
}

export interface LeaseInput {
  key: string;
  payload: unknown;
  context?: RemainingTime;
  /** The message being processed: a record that becomes IN_DOUBT keeps it, so an operator can re-send it. */
  message?: KeptMessage;
}

export interface EffectContext {
  /** `namespace#key`: pass it on as an `Idempotency-Key` so an idempotent remote dedupes too. */
  idempotencyKey: string;
  /** 1 on the first run of this key, more after failures or takeovers. */
  attempt: number;
}

export type LeaseOutcome<T> =
  /** The effect ran now. `recorded` is false when its completion could not be written (see the observer). */
  | { status: 'executed'; result: T; recorded: boolean }
  /**
   * The effect ran before; its stored result. `resultBytes` instead when the result was too large
   * to store (`result` is then undefined): the effect is done, its result cannot be replayed.
   */
  | { status: 'duplicate'; result: T; fromCache: boolean; resultBytes?: number }
  /** At-most-once: the effect may or may not have happened; not run, left for an operator. */
  | { status: 'in-doubt'; reason: StoredError };

export type LeaseStart<T> =
  /**
   * `awaitingStart`: the lease was taken ahead (at-most-once) and its record says the effect has
   * not started; `markStarted` (or the previous record's `recordCompletionAndStart`) must say it
   * may before the effect runs.
   */
  | { status: 'acquired'; lease: Lease; awaitingStart: boolean }
  | Exclude<LeaseOutcome<T>, { status: 'executed' }>;

/**
 * How a lease taken ahead fared in its predecessor's completion: marked started (its effect may
 * run), lost to another owner, or not marked (the completion could not be written, or its own
 * lease was lost): it has to be marked on its own, or given back.
 */
export type StartVerdict = 'started' | 'lease-lost' | 'not-started';

/** How a failed effect was recorded. */
export type FailureVerdict = 'failed' | 'rejected' | 'in-doubt';

/**
 * What became of a successful effect's COMPLETED write: written; fenced out by a new owner of the
 * record (whose record then says what happened); or not written even after retries — the error a
 * caller that acknowledges messages must throw, since the message must not be acknowledged.
 */
export type CompletionVerdict = 'recorded' | 'lease-lost' | RecordNotWrittenError;

/** Without a Lambda context nothing bounds the run: default to Lambda's 15-minute maximum. */
export const DEFAULT_LEASE_MS = 15 * 60 * 1000;
const DEFAULT_LEASE_MARGIN_MS = 2_000;

/**
 * Lease mode (DESIGN §4), for any side effect: acquire → run → complete. 2 writes for a first
 * delivery, 1 failed conditional write (0 from the cache) for a duplicate.
 */
export class LeaseIdempotency {
  readonly #options: LeaseIdempotencyOptions;
  readonly #cache: CompletedRecordCache | undefined;
  readonly #observer: IdempotencyObserver;

  constructor(options: LeaseIdempotencyOptions) {
    recordId(options.namespace, 'probe'); // fail fast on a bad namespace
    this.#options = options;
    this.#cache = options.cache === false ? undefined : (options.cache ?? new CompletedRecordCache());
    this.#observer = options.observer ?? consoleObserver;
  }

  get mode(): IdempotencyMode {
    return this.#options.mode;
  }

  /** Runs `effect` at most once per key (at-most-once) or until it completes once (at-least-once). */
  async run<T>(
    input: LeaseInput,
    effect: (context: EffectContext) => Promise<T> | T,
  ): Promise<LeaseOutcome<T>> {
    const start = await this.start<T>(input);
    if (start.status === 'duplicate') {
      // The caller wants the result: one too large to store cannot be replayed.
      const tooLarge = tooLargeError(recordId(this.#options.namespace, input.key), start);
      if (tooLarge) throw tooLarge;
    }
    if (start.status !== 'acquired') return start;
    const { lease } = start;
    let result: T;
    try {
      result = await effect({ idempotencyKey: lease.id, attempt: lease.attempt });
    } catch (error) {
      const verdict = await this.recordFailure(lease, error, input.message);
      if (verdict === 'in-doubt') return { status: 'in-doubt', reason: toStoredError(error) };
      throw error;
    }
    const completion = await this.recordCompletion(lease, result);
    return { status: 'executed', result, recorded: completion === 'recorded' };
  }

  /**
   * Acquires the lease, or tells why the effect must not run now. `ahead`: the lease is taken before
   * the record's turn (the later records of a FIFO group), and in at-most-once mode its record says
   * that the effect has not started — so that, should the invocation die before its turn, the lease
   * is taken over once it expires instead of being parked IN_DOUBT.
   */
  async start<T>(input: LeaseInput, options: { ahead?: boolean } = {}): Promise<LeaseStart<T>> {
    const { store, mode } = this.#options;
    const id = recordId(this.#options.namespace, input.key);
    const hash = payloadHash(input.payload);
    const cached = this.#cache?.duplicateOf(id, hash, store.now());
    if (cached) return { status: 'duplicate', result: parseResult<T>(cached.result), fromCache: true };

    // At-least-once takes any expired lease over: whether its effect started does not matter.
    const awaitingStart = options.ahead === true && mode === 'at-most-once';
    const acquired = await store.acquire({
      id,
      payloadHash: hash,
      leaseMs: this.#leaseMs(input.context),
      takeOverExpiredLease: mode === 'at-least-once',
      unstarted: awaitingStart,
    });
    if (acquired.acquired) return { status: 'acquired', lease: acquired.lease, awaitingStart };

    const verdict = judgeExistingRecord(acquired.existing, hash, store.now());
    switch (verdict.kind) {
      case 'completed':
        if (verdict.resultBytes !== undefined) {
          return {
            status: 'duplicate',
            result: undefined as T,
            fromCache: false,
            resultBytes: verdict.resultBytes,
          };
        }
        this.#remember(id, hash, verdict.result, acquired.existing.expiresAt);
        return { status: 'duplicate', result: parseResult<T>(verdict.result), fromCache: false };
      case 'in-doubt': {
        const reason = verdict.record.error ?? { name: 'InDoubt', message: 'outcome unknown' };
        return { status: 'in-doubt', reason };
      }
      case 'expired-lease': {
        const reason = {
          name: 'LeaseExpired',
          message: `lease expired at ${new Date(verdict.record.leaseExpiresAt ?? 0).toISOString()} without completion`,
        };
        // At-least-once would have taken the lease over in the acquire; getting here means a race.
        if (
          mode === 'at-most-once' &&
          (await store.parkExpiredLease(verdict.record, reason, input.message))
        ) {
          this.#observer.inDoubt(id, reason);
          return { status: 'in-doubt', reason };
        }
        throw new IdempotencyInProgressError(id, store.now());
      }
    }
  }

  /**
   * Says that the effect of a lease taken ahead may start now; false (and the observer hears of it)
   * when the lease was lost meanwhile: then the effect must not run. Throws what DynamoDB threw.
   */
  async markStarted(lease: Lease): Promise<boolean> {
    const marked = await this.#options.store.markStarted(lease);
    if (!marked) this.#observer.leaseLost(lease.id, 'start');
    return marked;
  }

  /**
   * {@link recordCompletion} of `lease`, and in the same transaction the start mark of `next` (a
   * lease taken ahead, of the record that runs next): one round trip between two effects, and no
   * crash can leave `next` marked started while this completion is unwritten. When the transaction
   * cannot apply because one of the two leases was lost, the other write is made on its own where
   * it still matters: the completion (with its retries); the start mark is left to the caller.
   * A lost `next` is reported here as `lease-lost` only: its own observer is the caller's to tell.
   */
  async recordCompletionAndStart(
    lease: Lease,
    result: unknown,
    next: Lease,
  ): Promise<{ completion: CompletionVerdict; next: StartVerdict }> {
    const serialized = serializeResult(result);
    const send = this.#options.store.prepareCompleteAndStart(lease, serialized, next);
    const { value: written, error } = await this.#writeWithRetries(send);
    if (written === undefined) {
      this.#observer.completionWriteFailed(lease.id, error);
      return { completion: new RecordNotWrittenError(lease.id, 'COMPLETED', error), next: 'not-started' };
    }
    if (written.applied) {
      this.#completed(lease, serialized);
      return { completion: 'recorded', next: 'started' };
    }
    if (!written.completionLost) {
      return { completion: await this.recordCompletion(lease, result), next: 'lease-lost' };
    }
    this.#observer.leaseLost(lease.id, 'complete');
    return { completion: 'lease-lost', next: written.startLost ? 'lease-lost' : 'not-started' };
  }

  /**
   * Records a successful effect. The effect already happened, so a failing write is retried with
   * backoff; if it still fails, the observer hears of it and the caller must not acknowledge the
   * message: its redelivery finds the lease expired and settles the record (DESIGN §3). A result
   * too large to store is recorded as its size: the effect is done, only its replay is lost.
   */
  async recordCompletion(lease: Lease, result: unknown): Promise<CompletionVerdict> {
    const serialized = serializeResult(result);
    const { value: written, error } = await this.#writeWithRetries(() =>
      this.#options.store.complete(lease, serialized),
    );
    if (written === undefined) {
      this.#observer.completionWriteFailed(lease.id, error);
      return new RecordNotWrittenError(lease.id, 'COMPLETED', error);
    }
    if (!written) {
      this.#observer.leaseLost(lease.id, 'complete');
      return 'lease-lost';
    }
    this.#completed(lease, serialized);
    return 'recorded';
  }

  /** After a COMPLETED write: a result too large to store is reported, any other is cached. */
  #completed(lease: Lease, serialized: ReturnType<typeof serializeResult>): void {
    if (serialized.resultBytes !== undefined) {
      this.#observer.resultNotStored(lease.id, serialized.resultBytes);
    } else {
      this.#remember(lease.id, lease.payloadHash, serialized.result, lease.recordExpiresAt);
    }
  }

  /**
   * Records a failed effect: REJECTED for a permanent error, IN_DOUBT for an unknown outcome in
   * at-most-once mode (keeping `message`), FAILED otherwise (the next delivery runs it again).
   * Throws `RecordNotWrittenError` when the write kept failing: the message must not be acknowledged.
   */
  async recordFailure(lease: Lease, error: unknown, message?: KeptMessage): Promise<FailureVerdict> {
    const { store, mode } = this.#options;
    const stored = toStoredError(error);
    const verdict: FailureVerdict =
      error instanceof OutcomeUnknownError && mode === 'at-most-once'
        ? 'in-doubt'
        : isRetryable(error)
          ? 'failed'
          : 'rejected';
    const { value: written, error: writeError } = await this.#writeWithRetries(() =>
      verdict === 'in-doubt'
        ? store.markInDoubt(lease, stored, message)
        : verdict === 'rejected'
          ? store.reject(lease, stored)
          : store.fail(lease, stored),
    );
    if (written === undefined) {
      this.#observer.failureWriteFailed(lease.id, writeError);
      throw new RecordNotWrittenError(lease.id, verdict, writeError);
    }
    if (!written) this.#observer.leaseLost(lease.id, verdict);
    else if (verdict === 'in-doubt') this.#observer.inDoubt(lease.id, stored);
    return verdict;
  }

  /** A fenced write, tried up to `completionAttempts` times with backoff; its last error if all failed. */
  #writeWithRetries<W>(write: () => Promise<W>) {
    const { completionAttempts } = this.#options;
    return retried(
      { ...RECORD_WRITE_RETRY, maxAttempts: completionAttempts ?? RECORD_WRITE_RETRY.maxAttempts },
      write,
    );
  }

  #leaseMs(context: RemainingTime | undefined): number {
    const { leaseMs, leaseMarginMs = DEFAULT_LEASE_MARGIN_MS } = this.#options;
    if (!context) return leaseMs ?? DEFAULT_LEASE_MS;
    return Math.max(leaseMs ?? 0, context.getRemainingTimeInMillis() + leaseMarginMs);
  }

  #remember(id: string, hash: string, result: string | undefined, expiresAtSec: number): void {
    this.#cache?.set(id, { payloadHash: hash, result, expiresAtMs: expiresAtSec * 1000 });
  }
}
