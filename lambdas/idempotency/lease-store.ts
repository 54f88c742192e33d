import type { Retried } from '../common/backoff.js';
import type { StoredError } from './errors.js';
import type { Delivery } from './history.js';
import type { DeadLetterClaim, IdempotencyRecord, KeptMessage } from './record.js';

/** The right to run the effect for one record, proven by `token` on every later write. */
export interface Lease {
  readonly id: string;
  readonly token: string;
  readonly payloadHash: string;
  /** Epoch milliseconds. */
  readonly expiresAt: number;
  /** Epoch seconds: when the record itself expires. */
  readonly recordExpiresAt: number;
  /** 1 for the first run of this key, more after failures or lease takeovers. */
  readonly attempt: number;
  /**
   * The record's `attempts` when the consumer last sent its key to the DLQ for failing too often
   * (0 if never): its attempts since then are `attempt` less this (DESIGN §5).
   */
  readonly attemptsAtDeadLetter: number;
  /**
   * False for a lease taken without counting its run (an at-least-once lease taken ahead of its
   * turn): its record's `attempts` is `attempt` less one until its outcome is written, or
   * `countRun` counts it (DESIGN §5).
   */
  readonly runCounted: boolean;
  /** It took over an expired lease: a run before it ended without an outcome (or never started). */
  readonly tookOver: boolean;
  /**
   * Set when the record was FAILED by a delivery the consumer sent to the DLQ: that SQS message's
   * id and its error. The same message back again must not run (DESIGN §5).
   */
  readonly deadLettered?: { messageId: string; error?: StoredError };
}

export type AcquireResult =
  | { acquired: true; lease: Lease }
  | { acquired: false; existing: IdempotencyRecord };

/**
 * The lease an acquire took, from the record it replaced (`old`: none for a new record): the next
 * attempt, and a takeover when `old` was IN_PROGRESS, unless the caller knows better (a retried
 * acquire that finds its own write). One definition for every store.
 */
export function grantedLease(
  input: AcquireInput,
  taken: Pick<Lease, 'token' | 'expiresAt' | 'recordExpiresAt' | 'runCounted'>,
  old: Partial<IdempotencyRecord>,
  attempt = (old.attempts ?? 0) + 1,
  tookOver = old.status === 'IN_PROGRESS',
): AcquireResult {
  return {
    acquired: true,
    lease: {
      id: input.id,
      payloadHash: input.payloadHash,
      ...taken,
      attempt,
      attemptsAtDeadLetter: old.attemptsAtDeadLetter ?? 0,
      tookOver,
      deadLettered: old.deadLetteredMessageId
        ? { messageId: old.deadLetteredMessageId, error: old.error }
        : undefined,
    },
  };
}

/** What `LeaseStore.acquire` is asked for. */
export interface AcquireInput {
  id: string;
  payloadHash: string;
  leaseMs: number;
  /** At-least-once: any expired lease of this payload is taken over; else only an unstarted one. */
  takeOverExpiredLease: boolean;
  /**
   * The lease is taken ahead of its turn: its effect has not started (DESIGN §4.1).
   * @default false
   */
  unstarted?: boolean;
  /**
   * With `unstarted`: the id of the record whose completion may let this lease start.
   * @default none: only a start mark of its own starts it
   */
  after?: string;
  /**
   * The token of an expired unstarted lease `after` a record, found safe to take over (`LeaseIdempotency.start`).
   * @default none
   */
  takeOverUnstarted?: string;
  /**
   * Whether the acquire counts a run in `attempts`; false for an at-least-once lease taken ahead,
   * whose run may never come (its outcome write or `countRun` counts it then).
   * @default true
   */
  countRun?: boolean;
  /**
   * The delivery it is taken for, named in the record's history (`oncely history`).
   * @default none: the history says a lease was taken, not for which message
   */
  delivery?: Delivery;
}

/**
 * Where lease mode (DESIGN §4) and the consumer keep their records: what `LeaseIdempotency`,
 * `idempotentRequest`, `fifoBatch` and `standardBatch` call, and no more. Each method is one
 * conditional step on the store's side (one DynamoDB request, one Valkey script), judged by the
 * store's clock (`now`), and each keeps DESIGN §3's contract: a write after the acquire is fenced
 * on the lease token; one applied with its answer lost, tried again, finds its own token and
 * counts as done. `DynamoDBIdempotencyStore` and `ValkeyIdempotencyStore` implement it;
 * transactional mode needs the DynamoDB one (its point is one DynamoDB transaction). Its methods
 * are internal, left out of the published declarations like the stores' own: a user builds a store
 * and hands it over.
 */
export interface LeaseStore {
  /**
   * Which database keeps the records. Public, unlike the methods, so that the published type is
   * not an empty one any object fits; transactional mode takes only `dynamodb`.
   */
  readonly kind: 'dynamodb' | 'valkey';
  /** Lifetime of a record in seconds (the consumer's dedup horizon is measured against it, DESIGN §2). @internal */
  readonly ttlSeconds: number;
  /** The store's clock, epoch milliseconds: every condition on time is judged by it. @internal */
  readonly now: () => number;

  /** @internal */
  acquire(input: AcquireInput): Promise<AcquireResult>;
  /** The record as it is now (strongly consistent), or undefined. @internal */
  read(id: string): Promise<IdempotencyRecord | undefined>;
  /** Lets an unstarted lease's effect start; false if the lease was lost. @internal */
  markStarted(lease: Lease): Promise<boolean>;
  /** Counts the run of a lease taken without counting it; false if the lease was lost. @internal */
  countRun(lease: Lease): Promise<boolean>;
  /** COMPLETED, fenced; with `next`, the same write starts that lease (`startedNext`). @internal */
  complete(lease: Lease, outcome: { result?: string; resultBytes?: number }, next?: Lease): Promise<boolean>;
  /** FAILED, fenced; with `deadLetteredMessageId`, the message sent to the DLQ for it. @internal */
  fail(lease: Lease, error: StoredError, deadLetteredMessageId?: string): Promise<boolean>;
  /** REJECTED, fenced. @internal */
  reject(lease: Lease, error: StoredError): Promise<boolean>;
  /** IN_DOUBT, fenced: unresolved, no expiry, keeping `message` if it fits. @internal */
  markInDoubt(lease: Lease, error: StoredError, message?: KeptMessage): Promise<boolean>;
  /**
   * Parks another owner's expired lease IN_DOUBT: true if this call (or its own earlier try) did,
   * else the record as it is now. @internal
   */
  parkExpiredLease(
    record: IdempotencyRecord,
    reason: StoredError,
    options?: { message?: KeptMessage; fence?: boolean },
  ): Promise<true | IdempotencyRecord | undefined>;
  /** Claims the pending report of a record a fence parked, for this delivery. @internal */
  claimInDoubtReport(id: string, message?: KeptMessage): Promise<boolean>;
  /** Deletes the record while it is IN_PROGRESS under this lease. @internal */
  release(lease: Lease): Promise<boolean>;
  /** {@link release}, tried a few times with backoff. @internal */
  releaseWithRetries(lease: Lease): Promise<Retried<boolean>>;
  /** Deletes another owner's expired, never started lease. @internal */
  releaseUnstarted(record: IdempotencyRecord): Promise<boolean>;
  /** Makes a live record last at least until `untilSec` (DESIGN §2). @internal */
  keepUntil(id: string, untilSec: number): Promise<boolean>;
  /** Claims the send of an SQS message to the DLQ (DESIGN §5). @internal */
  claimDeadLetter(messageId: string, claimMs: number): Promise<DeadLetterClaim>;
  /** Gives up a claim whose send failed. @internal */
  releaseDeadLetterClaim(messageId: string, token: string): Promise<void>;
  /** Marks an SQS message as sent to the DLQ. @internal */
  markDeadLettered(messageId: string): Promise<void>;
  /** Adds a DLQ send to the dead-letter log of its record (bounded). @internal */
  logDeadLetter(recordId: string, messageId: string, error: StoredError): Promise<void>;
}
