import { RECORD_WRITE_RETRY, retried } from '../common/backoff.js';
import { type KnownKeys, refuseUnknownKeys } from '../common/known-keys.js';
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
import type { Delivery } from './history.js';
import { payloadHash, recordId } from './keys.js';
import type { Lease, LeaseStore } from './lease-store.js';
import { consoleObserver, type IdempotencyObserver } from './observer.js';
import { type IdempotencyRecord, IN_DOUBT_REPORT_PENDING, type KeptMessage } from './record.js';
import { parseResult, serializeResult, tooLargeError } from './result-json.js';

/**
 * What happens when a lease expires without a completion (DESIGN §4): `at-least-once` runs the
 * effect again; `at-most-once` parks the record IN_DOUBT for an operator instead.
 */
export type IdempotencyMode = 'at-least-once' | 'at-most-once';

/** The part of the Lambda context the lease is sized from. */
export interface RemainingTime {
  /** Milliseconds left before the invocation times out. */
  getRemainingTimeInMillis(): number;
}

/** How a `LeaseIdempotency` keeps its records. */
export interface LeaseIdempotencyOptions {
  /** Where the records are kept: a `DynamoDBIdempotencyStore` or a `ValkeyIdempotencyStore`. */
  store: LeaseStore;
  /** The operation, e.g. "notifications": keys of different namespaces never collide. */
  namespace: string;
  /** What happens when a lease expires without completion: re-run (at-least-once) or IN_DOUBT (at-most-once). */
  mode: IdempotencyMode;
  /**
   * Minimum lease in milliseconds. With a Lambda context the lease is at least its remaining time
   * plus the margin; without one it is this.
   * @default 900_000 (Lambda's 15-minute maximum)
   */
  leaseMs?: number;
  /**
   * Added to the Lambda context's remaining time, for the record writes after the effect.
   * @default 2_000
   */
  leaseMarginMs?: number;
  /**
   * LRU of COMPLETED records answering hot duplicates without DynamoDB; `false` turns it off.
   * @default a `CompletedRecordCache` of 1,000 records for this instance
   */
  cache?: CompletedRecordCache | false;
  /**
   * Told what the core reports without throwing (a completion not written, a lease lost, a record
   * IN_DOUBT).
   * @default JSON lines on stderr
   */
  observer?: IdempotencyObserver;
  /**
   * How often a record write after the effect (COMPLETED, FAILED, REJECTED, IN_DOUBT) is tried
   * before giving up, on top of the AWS SDK's own retries.
   * @default 3
   */
  completionAttempts?: number;
}

export const LEASE_IDEMPOTENCY_OPTION_KEYS = {
  store: true,
  namespace: true,
  mode: true,
  leaseMs: true,
  leaseMarginMs: true,
  cache: true,
  observer: true,
  completionAttempts: true,
} satisfies KnownKeys<LeaseIdempotencyOptions>;

/** One call of `LeaseIdempotency.run`. */
export interface LeaseInput {
  /** The idempotency key within the namespace. */
  key: string;
  /** What must be equal for a repeat to be a duplicate rather than a conflict (its hash is stored). */
  payload: unknown;
  /**
   * The Lambda context: the lease lasts its remaining time plus `leaseMarginMs`.
   * @default none: the lease lasts `leaseMs`
   */
  context?: RemainingTime;
  /**
   * The message being processed: a record that becomes IN_DOUBT keeps it, so an operator can re-send it.
   * @default none: an IN_DOUBT record keeps no message
   */
  message?: KeptMessage;
  /**
   * The delivery being processed: the record's history names it (`oncely history`).
   * @default none: the history says when a lease was taken, not for which message
   */
  delivery?: Delivery;
}

/** What the effect of `LeaseIdempotency.run` is told. */
export interface EffectContext {
  /** `namespace#key`: pass it on as an `Idempotency-Key` so an idempotent remote dedupes too. */
  idempotencyKey: string;
  /** 1 on the first run of this key, more after failures or takeovers. */
  attempt: number;
}

/** What `LeaseIdempotency.run` did: ran the effect, found it done, or found it in doubt. */
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
   * not started; `markStarted` (or the previous record's `recordCompletion` with this lease as
   * `next`) must say it may before the effect runs.
   */
  | { status: 'acquired'; lease: Lease; awaitingStart: boolean }
  | Exclude<LeaseOutcome<T>, { status: 'executed' }>;

/**
 * A start taken ahead of the record's turn ({@link LeaseIdempotency.startAhead}): or `deferred`,
 * when the record holds an expired unstarted lease whose fate depends on the record before it,
 * which this invocation has yet to settle: it is decided at the record's turn.
 */
export type AheadStart<T> = LeaseStart<T> | { status: 'deferred' };

/** How a lease taken ahead fared in its predecessor's completion: started by it, or not (mark it on its own). */
export type StartVerdict = 'started' | 'not-started';

/** The leases this invocation holds, by record id: whose completion cannot start anything it does not know. */
export type HeldLeases = (id: string) => string | undefined;

/** How a failed effect was recorded. */
export type FailureVerdict = 'failed' | 'rejected' | 'in-doubt';

/**
 * What became of a successful effect's COMPLETED write: written; fenced out by a new owner of the
 * record (whose record then says what happened); or not written even after retries — the error a
 * caller that acknowledges messages must throw, since the message must not be acknowledged.
 */
export type CompletionVerdict = 'recorded' | 'lease-lost' | RecordNotWrittenError;

/** How far back {@link LeaseIdempotency} follows unstarted leases `after` one another: a batch's worth. */
const MAX_CHAIN_DEPTH = 10;

/** Without a Lambda context nothing bounds the run: default to Lambda's 15-minute maximum. */
export const DEFAULT_LEASE_MS = 15 * 60 * 1000;
export const DEFAULT_LEASE_MARGIN_MS = 2_000;

/**
 * Lease mode's steps, which {@link LeaseIdempotency} runs for its `run`, given the observer. A
 * consumer's lease operations take these steps themselves, their telemetry the observer, so that
 * their bundle carries neither `run` nor the console observer they never use. No entry point
 * exports it.
 */
export class LeaseCore {
  readonly #options: LeaseIdempotencyOptions;
  readonly #cache: CompletedRecordCache | undefined;
  readonly #observer: IdempotencyObserver;

  constructor(options: LeaseIdempotencyOptions, observer: IdempotencyObserver) {
    recordId(options.namespace, 'probe'); // fail fast on a bad namespace
    this.#options = options;
    this.#cache = options.cache === false ? undefined : (options.cache ?? new CompletedRecordCache());
    this.#observer = observer;
  }

  /** The mode it was built with. */
  get mode(): IdempotencyMode {
    return this.#options.mode;
  }

  /**
   * Acquires the lease at the record's turn, or tells why the effect must not run now. `held`: the
   * leases this invocation holds on the records before this one in its group (see
   * {@link #settleUnstarted}).
   * @internal
   */
  start<T>(input: LeaseInput, options: { held?: HeldLeases } = {}): Promise<LeaseStart<T>> {
    // Given `held`, #start decides an unstarted lease there and then: it never defers.
    return this.#start<T>(input, { held: options.held ?? (() => undefined) }) as Promise<LeaseStart<T>>;
  }

  /**
   * Takes the lease before the record's turn, with the rest of its FIFO group. In at-most-once mode
   * its record says that the effect has not started, and names the record before it (`after`),
   * whose completion may let it start — so that, should the invocation die before its turn, the
   * lease is taken over once it expires instead of being parked IN_DOUBT.
   * @internal
   */
  startAhead<T>(input: LeaseInput, options: { after?: string } = {}): Promise<AheadStart<T>> {
    return this.#start<T>(input, { ahead: true, after: options.after });
  }

  async #start<T>(
    input: LeaseInput,
    options: { ahead?: boolean; after?: string; held?: HeldLeases },
  ): Promise<AheadStart<T>> {
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
      after: awaitingStart ? options.after : undefined,
      // DESIGN §5: an at-least-once run counts when it starts; taken ahead, its turn may never come.
      countRun: !(options.ahead === true && mode === 'at-least-once'),
      delivery: input.delivery,
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
      case 'in-doubt':
        return this.#inDoubt(verdict.record, input);
      case 'expired-lease': {
        const { record } = verdict;
        // An unstarted lease the record before it may have started: decided once that record is
        // settled, which the group's earlier turns do (a start ahead of them waits for its turn).
        if (mode === 'at-most-once' && record.unstarted && record.after) {
          if (options.held === undefined) return { status: 'deferred' };
          if ((await this.#settleUnstarted(record, options.held, 0)) === 'not-started') {
            const retaken = await store.acquire({
              id,
              payloadHash: hash,
              leaseMs: this.#leaseMs(input.context),
              takeOverExpiredLease: false,
              takeOverUnstarted: record.leaseToken,
              delivery: input.delivery,
            });
            if (retaken.acquired) return { status: 'acquired', lease: retaken.lease, awaitingStart: false };
            throw new IdempotencyInProgressError(id, store.now()); // another invocation took it first
          }
        }
        const reason = expiredReason(record);
        // At-least-once would have taken the lease over in the acquire; getting here means a race.
        if (mode === 'at-most-once') {
          const parked = await store.parkExpiredLease(record, reason, { message: input.message });
          if (parked === true) {
            this.#observer.inDoubt(id, reason);
            return { status: 'in-doubt', reason };
          }
          // Another copy parked it meanwhile (and reported it), or another record's delivery did.
          if (parked?.status === 'IN_DOUBT') return this.#inDoubt(parked, input);
        }
        throw new IdempotencyInProgressError(id, store.now());
      }
    }
  }

  /**
   * An IN_DOUBT record met by a delivery of its key: reported once, by the write that parked it —
   * or, when another record's delivery parked it without its message (a fence,
   * {@link #settleUnstarted}), by the first delivery of its own message to claim the report.
   */
  async #inDoubt(
    record: IdempotencyRecord,
    input: LeaseInput,
  ): Promise<{ status: 'in-doubt'; reason: StoredError }> {
    const reason = record.error ?? { name: 'InDoubt', message: 'outcome unknown' };
    if (
      record.inDoubtReport === IN_DOUBT_REPORT_PENDING &&
      (await this.#options.store.claimInDoubtReport(record.id, input.message))
    ) {
      this.#observer.inDoubt(record.id, reason);
    }
    return { status: 'in-doubt', reason };
  }

  /**
   * At-most-once: whether the effect of `record` — IN_PROGRESS past an unstarted lease taken ahead
   * `after` another record — may have started. Only that record's completion could have let it
   * (`startedNext`), so it is read: if it names this lease, `started`. If that record is still
   * IN_PROGRESS in hands other than this invocation's (`held`), its owner may yet complete it and
   * start this lease: while its lease runs, that owner is waited for (IdempotencyInProgressError);
   * once it expired, the record is fenced first — parked IN_DOUBT if its own effect may have
   * started, given back if not — so that no late completion can start this lease after all.
   */
  async #settleUnstarted(
    record: IdempotencyRecord,
    held: HeldLeases,
    depth: number,
  ): Promise<'started' | 'not-started'> {
    const { store } = this.#options;
    if (!record.after) return 'not-started'; // only a write of its own could start it
    const before = await store.read(record.after);
    if (before?.startedNext?.token === record.leaseToken) return 'started';
    if (before?.status !== 'IN_PROGRESS' || before.leaseToken === held(before.id)) return 'not-started';
    const now = store.now();
    // A group's leases are at most a batch apiece: a longer chain is not one this code wrote.
    if ((before.leaseExpiresAt ?? 0) > now || depth >= MAX_CHAIN_DEPTH) {
      throw new IdempotencyInProgressError(before.id, before.leaseExpiresAt ?? now);
    }
    const beforeStarted =
      !before.unstarted || (await this.#settleUnstarted(before, held, depth + 1)) === 'started';
    // Parked without a word: this delivery's message and hooks are not that record's, whose own
    // delivery reports it (#inDoubt).
    const fenced = beforeStarted
      ? parkedUnder(await store.parkExpiredLease(before, expiredReason(before), { fence: true }), before)
      : await store.releaseUnstarted(before);
    if (!fenced) throw new IdempotencyInProgressError(before.id, now); // it moved meanwhile: look again later
    return 'not-started';
  }

  /**
   * Counts the run of a lease taken without counting it, now that its effect starts
   * (`store.countRun`). False (and the observer hears of it) when the lease was lost meanwhile.
   * Throws what DynamoDB threw.
   * @internal
   */
  async countRun(lease: Lease): Promise<boolean> {
    const counted = await this.#options.store.countRun(lease);
    if (!counted) this.#observer.leaseLost(lease.id, 'count');
    return counted;
  }

  /**
   * Says that the effect of a lease taken ahead may start now; false (and the observer hears of it)
   * when the lease was lost meanwhile: then the effect must not run. Throws what DynamoDB threw.
   * @internal
   */
  async markStarted(lease: Lease): Promise<boolean> {
    const marked = await this.#options.store.markStarted(lease);
    if (!marked) this.#observer.leaseLost(lease.id, 'start');
    return marked;
  }

  /**
   * Records a successful effect. The effect already happened, so a failing write is retried with
   * backoff; if it still fails, the observer hears of it and the caller must not acknowledge the
   * message: its redelivery finds the lease expired and settles the record (DESIGN §3). A result
   * too large to store is recorded as its size: the effect is done, only its replay is lost.
   *
   * With `next` (a lease taken ahead, unstarted, `after` this record: the record that runs next),
   * the same write lets `next`'s effect start: one round trip between two effects, and no crash
   * can leave `next` started while this completion is unwritten. `next` says `started` only if the
   * completion was recorded; otherwise its start mark is the caller's to write, or not.
   * @internal
   */
  async recordCompletion(lease: Lease, result: unknown): Promise<CompletionVerdict>;
  /** @internal */
  async recordCompletion(
    lease: Lease,
    result: unknown,
    next: Lease,
  ): Promise<{ completion: CompletionVerdict; next: StartVerdict }>;
  async recordCompletion(
    lease: Lease,
    result: unknown,
    next?: Lease,
  ): Promise<CompletionVerdict | { completion: CompletionVerdict; next: StartVerdict }> {
    const serialized = serializeResult(result);
    const { value: written, error } = await this.#writeWithRetries(() =>
      this.#options.store.complete(lease, serialized, next),
    );
    let completion: CompletionVerdict;
    if (written === undefined) {
      this.#observer.completionWriteFailed(lease.id, error);
      completion = new RecordNotWrittenError(lease.id, 'COMPLETED', error);
    } else if (!written) {
      this.#observer.leaseLost(lease.id, 'complete');
      completion = 'lease-lost';
    } else {
      this.#completed(lease, serialized);
      completion = 'recorded';
    }
    if (!next) return completion;
    return { completion, next: completion === 'recorded' ? 'started' : 'not-started' };
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
   * `deadLetteredMessageId`: a FAILED record's SQS message is being sent to the DLQ for failing too
   * often (`store.fail`).
   * @internal
   */
  async recordFailure(
    lease: Lease,
    error: unknown,
    message?: KeptMessage,
    deadLetteredMessageId?: string,
  ): Promise<FailureVerdict> {
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
          : store.fail(lease, stored, deadLetteredMessageId),
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

  /** A COMPLETED record always has an expiry; one without (only unresolved records) is never cached. */
  #remember(id: string, hash: string, result: string | undefined, expiresAtSec: number | undefined): void {
    if (expiresAtSec === undefined) return;
    this.#cache?.set(id, { payloadHash: hash, result, expiresAtMs: expiresAtSec * 1000 });
  }
}

/**
 * Lease mode (DESIGN §4), for any side effect: acquire → run → complete. 2 writes for a first
 * delivery, 1 failed conditional write (0 from the cache) for a duplicate. In an SQS consumer,
 * `leaseOperation` (`oncely/consumer`) drives it for you.
 *
 * @example
 * ```ts
 * const mail = new LeaseIdempotency({ store, namespace: 'mail', mode: 'at-most-once' });
 * const outcome = await mail.run({ key: order.id, payload: order, context }, ({ idempotencyKey }) =>
 *   sendMail(order, { headers: { 'Idempotency-Key': idempotencyKey } }),
 * );
 * if (outcome.status === 'in-doubt') console.warn('left for an operator', outcome.reason);
 * ```
 */
export class LeaseIdempotency {
  readonly #core: LeaseCore;
  readonly #namespace: string;

  constructor(options: LeaseIdempotencyOptions) {
    refuseUnknownKeys('new LeaseIdempotency()', options, LEASE_IDEMPOTENCY_OPTION_KEYS);
    this.#core = new LeaseCore(options, options.observer ?? consoleObserver);
    this.#namespace = options.namespace;
  }

  /** The mode it was built with. */
  get mode(): IdempotencyMode {
    return this.#core.mode;
  }

  /**
   * Runs `effect` at most once per key (at-most-once) or until it completes once (at-least-once).
   * Throws the effect's error after recording it (a `NonRetryableError` is replayed to duplicates);
   * `IdempotencyConflictError` for the same key with another payload, `IdempotencyInProgressError`
   * while another invocation holds the lease.
   */
  async run<T>(
    input: LeaseInput,
    effect: (context: EffectContext) => Promise<T> | T,
  ): Promise<LeaseOutcome<T>> {
    const start = await this.#core.start<T>(input);
    if (start.status === 'duplicate') {
      // The caller wants the result: one too large to store cannot be replayed.
      const tooLarge = tooLargeError(recordId(this.#namespace, input.key), start);
      if (tooLarge) throw tooLarge;
    }
    if (start.status !== 'acquired') return start;
    const { lease } = start;
    let result: T;
    try {
      result = await effect({ idempotencyKey: lease.id, attempt: lease.attempt });
    } catch (error) {
      const verdict = await this.#core.recordFailure(lease, error, input.message);
      if (verdict === 'in-doubt') return { status: 'in-doubt', reason: toStoredError(error) };
      throw error;
    }
    const completion = await this.#core.recordCompletion(lease, result);
    return { status: 'executed', result, recorded: completion === 'recorded' };
  }

  /** {@link LeaseCore.start}. @internal */
  start<T>(input: LeaseInput, options?: { held?: HeldLeases }): Promise<LeaseStart<T>> {
    return this.#core.start<T>(input, options);
  }

  /** {@link LeaseCore.startAhead}. @internal */
  startAhead<T>(input: LeaseInput, options?: { after?: string }): Promise<AheadStart<T>> {
    return this.#core.startAhead<T>(input, options);
  }

  /** {@link LeaseCore.countRun}. @internal */
  countRun(lease: Lease): Promise<boolean> {
    return this.#core.countRun(lease);
  }

  /** {@link LeaseCore.markStarted}. @internal */
  markStarted(lease: Lease): Promise<boolean> {
    return this.#core.markStarted(lease);
  }

  /** {@link LeaseCore.recordCompletion}. @internal */
  recordCompletion(lease: Lease, result: unknown): Promise<CompletionVerdict>;
  /** @internal */
  recordCompletion(
    lease: Lease,
    result: unknown,
    next: Lease,
  ): Promise<{ completion: CompletionVerdict; next: StartVerdict }>;
  recordCompletion(
    lease: Lease,
    result: unknown,
    next?: Lease,
  ): Promise<CompletionVerdict | { completion: CompletionVerdict; next: StartVerdict }> {
    return next
      ? this.#core.recordCompletion(lease, result, next)
      : this.#core.recordCompletion(lease, result);
  }

  /** {@link LeaseCore.recordFailure}. @internal */
  recordFailure(
    lease: Lease,
    error: unknown,
    message?: KeptMessage,
    deadLetteredMessageId?: string,
  ): Promise<FailureVerdict> {
    return this.#core.recordFailure(lease, error, message, deadLetteredMessageId);
  }
}

/** Whether a park left `record` IN_DOUBT under its lease: by this call, an earlier try of it, or another. */
function parkedUnder(parked: true | IdempotencyRecord | undefined, record: IdempotencyRecord): boolean {
  return parked === true || (parked?.status === 'IN_DOUBT' && parked.leaseToken === record.leaseToken);
}

/** Why an IN_PROGRESS record past its lease is parked IN_DOUBT. */
function expiredReason(record: IdempotencyRecord): StoredError {
  return {
    name: 'LeaseExpired',
    message: `lease expired at ${new Date(record.leaseExpiresAt ?? 0).toISOString()} without completion`,
  };
}
