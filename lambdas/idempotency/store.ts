import { randomUUID } from 'node:crypto';
import {
  type AttributeValue,
  ConditionalCheckFailedException,
  type DynamoDBClient,
  TransactionCanceledException,
} from '@aws-sdk/client-dynamodb';
import {
  DeleteCommand,
  DynamoDBDocumentClient,
  GetCommand,
  PutCommand,
  TransactWriteCommand,
  type TransactWriteCommandInput,
  UpdateCommand,
} from '@aws-sdk/lib-dynamodb';
import { unmarshall } from '@aws-sdk/util-dynamodb';
import { RECORD_WRITE_RETRY, retried } from '../common/backoff.js';
import { type KnownKeys, refuseUnknownKeys } from '../common/known-keys.js';
import { InvalidRecordWriteError, type StoredError, TransactionConditionFailedError } from './errors.js';
import {
  APPEND_HISTORY,
  acquireEntry,
  appendValues,
  type Delivery,
  deliveryFields,
  HISTORY_ATTRIBUTE,
  MAX_HISTORY_ENTRIES,
  shortToken,
  trimmedHistory,
} from './history.js';
import {
  type AcquireInput,
  type AcquireResult,
  grantedLease,
  type Lease,
  type LeaseStore,
} from './lease-store.js';
import {
  DEFAULT_RECORD_TTL_SECONDS,
  type DeadLetterClaim,
  type DeadLetterMark,
  deadLetterLogId,
  deadLetterMarkId,
  EXPIRES_AT_ATTRIBUTE,
  type HistoryEntry,
  type IdempotencyRecord,
  IN_DOUBT_REPORT_PENDING,
  type KeptMessage,
  keepable,
  type RecordStatus,
  UNRESOLVED_ATTRIBUTE,
} from './record.js';

/** One business write of a transactional handler, in DynamoDBDocumentClient's format. */
export type TransactionWrite = NonNullable<TransactWriteCommandInput['TransactItems']>[number];

export type TransactionResult =
  | { committed: true; recordExpiresAt: number }
  | { committed: false; existing: IdempotencyRecord };

/** The table a `DynamoDBIdempotencyStore` keeps its records in. */
export interface IdempotencyStoreOptions {
  /** The client of the table's region and account. */
  client: DynamoDBClient;
  /** The idempotency table (DESIGN §3): partition key `id` (string), TTL on `expiresAt`. */
  tableName: string;
  /**
   * Lifetime of a record in seconds; must outlive queue + DLQ retention (the default is past SQS's
   * longest retention of both).
   * @default 2_592_000 (30 days)
   */
  ttlSeconds?: number;
  /**
   * Clock in epoch milliseconds; tests move it to expire leases and records.
   * @default Date.now
   */
  now?: () => number;
}

const STORE_OPTION_KEYS = {
  client: true,
  tableName: true,
  ttlSeconds: true,
  now: true,
} satisfies KnownKeys<IdempotencyStoreOptions>;

const IN_PROGRESS = 'IN_PROGRESS';
/** The attribute of a lease taken ahead whose effect has not started (see `IdempotencyRecord.unstarted`). */
const UNSTARTED = 'unstarted';
/** The attribute naming the record whose completion may let an unstarted lease start (`IdempotencyRecord.after`). */
const AFTER = 'after';
/** The record's `attempts` when the consumer last dead-lettered its key (`IdempotencyRecord.attemptsAtDeadLetter`). */
const ATTEMPTS_AT_DEAD_LETTER = 'attemptsAtDeadLetter';
/** The SQS message the consumer dead-lettered with the FAILED write (`IdempotencyRecord.deadLetteredMessageId`). */
const DEAD_LETTERED_MESSAGE_ID = 'deadLetteredMessageId';
/** Who reported an IN_DOUBT record (`IdempotencyRecord.inDoubtReport`). */
const IN_DOUBT_REPORT = 'inDoubtReport';
const STATUS_NAMES = { '#status': 'status' };
/** What a conditional write asks to get back when its condition fails: the record in the way (`existingItem`). */
const RETURN_EXISTING = { ReturnValuesOnConditionCheckFailure: 'ALL_OLD' } as const;
const ABSENT_OR_EXPIRED = 'attribute_not_exists(id) OR expiresAt <= :nowSec';
/** The condition of every write after the acquire: the record is still IN_PROGRESS under this lease. */
const FENCED = '#status = :inProgress AND leaseToken = :token';

/**
 * The idempotency table (DESIGN §3). Every method is a single DynamoDB request; none reads first:
 * a failed condition returns the existing item in the error, which is all a caller needs. Its
 * methods are the modes' and the consumer's: a user builds one and hands it over.
 *
 * @example
 * ```ts
 * const store = new DynamoDBIdempotencyStore({ client: new DynamoDBClient({}), tableName: 'idempotency' });
 * export const handler = middy().use(fifoBatch({ store, operations }));
 * ```
 */
export class DynamoDBIdempotencyStore implements LeaseStore {
  /** {@inheritDoc LeaseStore.kind} */
  readonly kind = 'dynamodb' as const;
  /** @internal */
  readonly tableName: string;
  /** @internal */
  readonly ttlSeconds: number;
  /** @internal */
  readonly now: () => number;
  readonly #documents: DynamoDBDocumentClient;

  constructor(options: IdempotencyStoreOptions) {
    refuseUnknownKeys('new DynamoDBIdempotencyStore()', options, STORE_OPTION_KEYS);
    this.tableName = options.tableName;
    this.ttlSeconds = options.ttlSeconds ?? DEFAULT_RECORD_TTL_SECONDS;
    this.now = options.now ?? Date.now;
    this.#documents = DynamoDBDocumentClient.from(options.client, {
      marshallOptions: { removeUndefinedValues: true },
    });
  }

  /**
   * Takes the lease if the record is absent, expired or FAILED, or IN_PROGRESS past a lease whose
   * effect never started — each only for the same payload. With `takeOverExpiredLease` any expired
   * lease is taken over; without, only an `unstarted` one, and one that names the record whose
   * completion may have let it start (`after`) only if it is the lease `takeOverUnstarted` names:
   * the caller has read that record and found it did not. A conditional PutItem creates an absent
   * record; if the key has one, a conditional UpdateItem takes it, counting the attempt, unless the
   * record the PutItem found cannot be taken anyway (DESIGN §3). With `unstarted`, the record says
   * that the effect has not started yet ({@link markStarted} says it may, or the completion of the
   * record `after` names, with `startedNext`). If the SDK retried either write after its answer was
   * lost, the retry finds the record holding this call's own token: the lease is ours all the same.
   * @internal
   */
  async acquire(input: AcquireInput): Promise<AcquireResult> {
    const now = this.now();
    const token = randomUUID();
    const leaseExpiresAt = now + input.leaseMs;
    const recordExpiresAt = this.#recordExpiresAt(now);
    const unstartedTakeover = `attribute_exists(${UNSTARTED}) AND (attribute_not_exists(#after)${
      input.takeOverUnstarted ? ' OR leaseToken = :unstartedToken' : ''
    })`;
    const takeover = `(#status = :inProgress AND leaseExpiresAt <= :nowMs AND payloadHash = :hash${
      input.takeOverExpiredLease ? '' : ` AND ${unstartedTakeover}`
    })`;
    const after = input.unstarted ? input.after : undefined;
    const runCounted = input.countRun ?? true;
    // What the acquire's UpdateItem does to the history: known once the PutItem found the record.
    let history = historyUpdate(undefined, acquireEntry(now, token, input.delivery));
    const lease = (old: Partial<IdempotencyRecord>, attempt?: number, tookOver?: boolean) =>
      grantedLease(
        input,
        { token, expiresAt: leaseExpiresAt, recordExpiresAt, runCounted },
        old,
        attempt,
        tookOver,
      );
    // Put first: a first delivery, the common case, costs DynamoDB less as a PutItem than as the
    // UpdateItem below, and a failed PutItem returns the record, which settles a duplicate.
    try {
      await this.#documents.send(
        new PutCommand({
          TableName: this.tableName,
          Item: {
            id: input.id,
            status: IN_PROGRESS,
            payloadHash: input.payloadHash,
            leaseToken: token,
            leaseExpiresAt,
            expiresAt: recordExpiresAt,
            updatedAt: now,
            attempts: runCounted ? 1 : 0,
            [ATTEMPTS_AT_DEAD_LETTER]: 0,
            ...(input.unstarted ? { [UNSTARTED]: true } : {}),
            ...(after ? { [AFTER]: after } : {}),
            [HISTORY_ATTRIBUTE]: [acquireEntry(now, token, input.delivery, true)],
          },
          ConditionExpression: 'attribute_not_exists(id)',
          ...RETURN_EXISTING,
        }),
      );
      return lease({});
    } catch (error) {
      const existing = await this.#existingAfterFailedAcquire(error, input.id, token);
      // Only this call's PutItem writes its token: a retry of it after a lost answer found its record.
      if (existing.status === IN_PROGRESS && existing.leaseToken === token) return lease({});
      if (!mayTakeLease(existing, now, input)) return { acquired: false, existing };
      history = historyUpdate(existing.history, acquireEntry(now, token, input.delivery));
    }
    try {
      const output = await this.#documents.send(
        new UpdateCommand({
          ...this.#record(input.id),
          // A record past its TTL that DynamoDB has not deleted yet goes on counting its attempts.
          // The answer holds the old values of what this sets or removes (UPDATED_OLD): attempts,
          // and attemptsAtDeadLetter (set to itself for that), deadLetteredMessageId and the error.
          UpdateExpression:
            'SET #status = :inProgress, payloadHash = :hash, leaseToken = :token, leaseExpiresAt = :leaseExpiresAt, ' +
            `expiresAt = :expiresAt, updatedAt = :nowMs, attempts = if_not_exists(attempts, :zero) + :run, ` +
            `${ATTEMPTS_AT_DEAD_LETTER} = if_not_exists(${ATTEMPTS_AT_DEAD_LETTER}, :zero)${
              input.unstarted ? `, ${UNSTARTED} = :true` : ''
            }${after ? ', #after = :after' : ''}, ${history.expression} REMOVE #result, resultBytes, #error, #message, startedNext, ${DEAD_LETTERED_MESSAGE_ID}, ${UNRESOLVED_ATTRIBUTE}, ${IN_DOUBT_REPORT}${
              input.unstarted ? '' : `, ${UNSTARTED}`
            }${after ? '' : ', #after'}`,
          ConditionExpression: `${ABSENT_OR_EXPIRED} OR (#status = :failed AND payloadHash = :hash) OR ${takeover}`,
          ExpressionAttributeNames: {
            ...STATUS_NAMES,
            '#result': 'result',
            '#error': 'error',
            '#message': 'message',
            '#after': AFTER,
          },
          ExpressionAttributeValues: {
            ':inProgress': IN_PROGRESS,
            ':hash': input.payloadHash,
            ':token': token,
            ...(after ? { ':after': after } : {}),
            ...(input.takeOverUnstarted && !input.takeOverExpiredLease
              ? { ':unstartedToken': input.takeOverUnstarted }
              : {}),
            ':leaseExpiresAt': leaseExpiresAt,
            ':expiresAt': recordExpiresAt,
            ':nowMs': now,
            ':nowSec': Math.floor(now / 1000),
            ':zero': 0,
            ':run': runCounted ? 1 : 0,
            ':failed': 'FAILED',
            ...(input.unstarted ? { ':true': true } : {}),
            ...history.values,
          },
          ReturnValues: 'UPDATED_OLD',
          ...RETURN_EXISTING,
        }),
      );
      return lease((output.Attributes ?? {}) as Partial<IdempotencyRecord>);
    } catch (error) {
      const existing = await this.#existingAfterFailedAcquire(error, input.id, token);
      if (existing.status === IN_PROGRESS && existing.leaseToken === token)
        // Its earlier values are gone: whether it took a lease over too (counted at its turn then).
        return lease(existing, (existing.attempts ?? 1) + (runCounted ? 0 : 1), true);
      return { acquired: false, existing };
    }
  }

  /**
   * Records the effect as done. Returns false if the lease was lost (fencing). With `next` (a lease
   * taken ahead, unstarted, whose `after` is this record), the same write says that `next`'s effect
   * may start now (`startedNext`): one round trip between two effects, and no crash can leave `next`
   * started while this completion is unwritten, for it is this completion that starts it.
   * @internal
   */
  complete(lease: Lease, outcome: { result?: string; resultBytes?: number }, next?: Lease): Promise<boolean> {
    return this.#fencedUpdate(lease, 'COMPLETED', {
      result: outcome.result,
      resultBytes: outcome.resultBytes,
      startedNext: next ? { id: next.id, token: next.token } : undefined,
    });
  }

  /** The record as it is now (a strongly consistent read), or undefined if there is none. @internal */
  async read(id: string): Promise<IdempotencyRecord | undefined> {
    const output = await this.#documents.send(new GetCommand({ ...this.#record(id), ConsistentRead: true }));
    return output.Item as IdempotencyRecord | undefined;
  }

  /**
   * Says that the effect of a lease taken ahead (`unstarted`) may start now: from here on, an expired
   * lease of this record is parked IN_DOUBT (at-most-once) rather than taken over. Fenced on the
   * lease; a retry after a lost answer finds it still ours and applies again, harmlessly. False if
   * the lease was lost: another owner has the record now.
   * @internal
   */
  markStarted(lease: Lease): Promise<boolean> {
    return this.#conditional(
      () => this.#documents.send(new UpdateCommand(this.#startMark(lease))),
      () => false,
    );
  }

  /**
   * Counts the run of a lease taken without counting it (`runCounted` false), now that its effect
   * starts: `attempts = lease.attempt`, fenced on the lease, so a retry after a lost answer sets the
   * same. False if the lease was lost.
   * @internal
   */
  countRun(lease: Lease): Promise<boolean> {
    return this.#conditional(
      () =>
        this.#documents.send(
          new UpdateCommand({
            ...this.#record(lease.id),
            UpdateExpression: 'SET attempts = :attempt, updatedAt = :nowMs',
            ConditionExpression: FENCED,
            ExpressionAttributeNames: STATUS_NAMES,
            ExpressionAttributeValues: {
              ':inProgress': IN_PROGRESS,
              ':token': lease.token,
              ':attempt': lease.attempt,
              ':nowMs': this.now(),
            },
          }),
        ),
      () => false,
    );
  }

  /**
   * Records a retryable failure: the next delivery may acquire the record again. With
   * `deadLetteredMessageId`, the consumer sends that SQS message to the DLQ for failing too often:
   * the record says at which attempt, so that a redriven copy's attempts count afresh, and which
   * message, so that this one, back again, is not run (DESIGN §5).
   * @internal
   */
  fail(lease: Lease, error: StoredError, deadLetteredMessageId?: string): Promise<boolean> {
    return this.#fencedUpdate(lease, 'FAILED', {
      error,
      [ATTEMPTS_AT_DEAD_LETTER]: deadLetteredMessageId ? lease.attempt : undefined,
      [DEAD_LETTERED_MESSAGE_ID]: deadLetteredMessageId,
    });
  }

  /** Records a permanent failure: duplicates get the same error. @internal */
  reject(lease: Lease, error: StoredError): Promise<boolean> {
    return this.#fencedUpdate(lease, 'REJECTED', { error });
  }

  /**
   * Records that the effect may or may not have happened; only an operator moves it on. The
   * record keeps `message` (if it fits), so that the operator can run it again; it enters the
   * unresolved index and loses its `expiresAt`, so that TTL never deletes it (and the message it
   * keeps) before an operator resolves it; resolving gives it a full TTL again.
   * @internal
   */
  markInDoubt(lease: Lease, error: StoredError, message?: KeptMessage): Promise<boolean> {
    return this.#fencedUpdate(
      lease,
      'IN_DOUBT',
      { error, message: keepable(message), [UNRESOLVED_ATTRIBUTE]: 'IN_DOUBT' },
      [EXPIRES_AT_ATTRIBUTE],
    );
  }

  /**
   * At-most-once: parks a record whose owner's lease expired without completion as IN_DOUBT,
   * fenced on that owner's token so a concurrent completion wins. True if this call parked it (or
   * an earlier try of it, applied with its answer lost: the record carries this call's report
   * token); otherwise the record as it is now (undefined if there is none), e.g. parked by another
   * copy meanwhile, which reports it. The record keeps `message` (the delivery that found it; if it
   * fits), as with `markInDoubt`. With `fence` (another record's delivery parks it, without its
   * message) its report is left pending for its own delivery (`claimInDoubtReport`).
   * @internal
   */
  async parkExpiredLease(
    record: IdempotencyRecord,
    reason: StoredError,
    { message, fence = false }: { message?: KeptMessage; fence?: boolean } = {},
  ): Promise<true | IdempotencyRecord | undefined> {
    const now = this.now();
    const kept = fence ? undefined : keepable(message);
    const report = fence ? IN_DOUBT_REPORT_PENDING : randomUUID();
    return this.#conditional(
      () =>
        this.#documents.send(
          new UpdateCommand({
            ...this.#record(record.id),
            UpdateExpression:
              `SET #status = :inDoubt, #error = :error, updatedAt = :nowMs, ${UNRESOLVED_ATTRIBUTE} = :inDoubt, ` +
              `${IN_DOUBT_REPORT} = :report, attempts = if_not_exists(attempts, :one), ${APPEND_HISTORY}${kept ? ', #message = :message' : ''} ` +
              // Unresolved, it must not expire (see markInDoubt).
              `REMOVE ${EXPIRES_AT_ATTRIBUTE}, leaseExpiresAt, ${UNSTARTED}, #after`,
            ConditionExpression: '#status = :inProgress AND leaseToken = :token AND leaseExpiresAt <= :nowMs',
            ExpressionAttributeNames: {
              ...STATUS_NAMES,
              '#error': 'error',
              '#after': AFTER,
              ...(kept ? { '#message': 'message' } : {}),
            },
            ExpressionAttributeValues: {
              ':inDoubt': 'IN_DOUBT',
              ':inProgress': IN_PROGRESS,
              ':token': record.leaseToken,
              ':error': reason,
              ':report': report,
              ':nowMs': now,
              ':one': 1,
              ...appendValues({ s: 'IN_DOUBT', t: now, l: shortToken(record.leaseToken), x: reason.name }),
              ...(kept ? { ':message': kept } : {}),
            },
            ...RETURN_EXISTING,
          }),
        ),
      (error) => {
        const existing = existingItem(error);
        // Our own earlier try, applied with its answer lost, already parked it: its token says so.
        if (report !== IN_DOUBT_REPORT_PENDING && existing?.inDoubtReport === report) return true;
        return existing;
      },
    );
  }

  /**
   * Claims the report of an IN_DOUBT record that another record's delivery parked
   * ({@link parkExpiredLease} without a message), for this delivery of its own message, which the
   * record then keeps (if it fits). True for one delivery only (or its own retried try).
   * @internal
   */
  async claimInDoubtReport(id: string, message?: KeptMessage): Promise<boolean> {
    const kept = keepable(message);
    const report = randomUUID();
    return this.#conditional(
      () =>
        this.#documents.send(
          new UpdateCommand({
            ...this.#record(id),
            UpdateExpression: `SET ${IN_DOUBT_REPORT} = :report${kept ? ', #message = :message' : ''}`,
            ConditionExpression: `#status = :inDoubt AND ${IN_DOUBT_REPORT} = :pending`,
            ExpressionAttributeNames: { ...STATUS_NAMES, ...(kept ? { '#message': 'message' } : {}) },
            ExpressionAttributeValues: {
              ':inDoubt': 'IN_DOUBT',
              ':pending': IN_DOUBT_REPORT_PENDING,
              ':report': report,
              ...(kept ? { ':message': kept } : {}),
            },
            ...RETURN_EXISTING,
          }),
        ),
      (error) => existingItem(error)?.inDoubtReport === report,
    );
  }

  /** Gives the record up untouched by any effect, so the next delivery starts afresh. @internal */
  release(lease: Lease): Promise<boolean> {
    return this.#fencedDelete(lease.id, lease.token);
  }

  /**
   * At-most-once: gives up another owner's expired lease that was taken ahead and never started,
   * so that its owner can no longer complete anything under it (see `LeaseIdempotency.start`): the
   * record's next delivery runs it afresh. True if it is gone (by this call or an earlier try whose
   * answer was lost); false if it changed meanwhile.
   * @internal
   */
  releaseUnstarted(record: IdempotencyRecord): Promise<boolean> {
    return this.#fencedDelete(record.id, record.leaseToken ?? '', {
      condition: `attribute_exists(${UNSTARTED}) AND leaseExpiresAt <= :nowMs`,
      values: { ':nowMs': this.now() },
    });
  }

  /**
   * Deletes the record while it is IN_PROGRESS under `token` (and `also` holds). True if it is gone:
   * deleted now, or by our own earlier try whose answer was lost (no record left); false if another
   * owner's record is there.
   */
  #fencedDelete(
    id: string,
    token: string,
    also?: { condition: string; values: Record<string, unknown> },
  ): Promise<boolean> {
    return this.#conditional(
      () =>
        this.#documents.send(
          new DeleteCommand({
            ...this.#record(id),
            ConditionExpression: also ? `${FENCED} AND ${also.condition}` : FENCED,
            ExpressionAttributeNames: STATUS_NAMES,
            ExpressionAttributeValues: { ':inProgress': IN_PROGRESS, ':token': token, ...also?.values },
            ...RETURN_EXISTING,
          }),
        ),
      (error) => existingItem(error) === undefined,
    );
  }

  /**
   * {@link release}, tried a few times with backoff: `value` says whether it was released (false:
   * another owner's record); `error` when it kept failing — the lease then expires on its own.
   * @internal
   */
  releaseWithRetries(lease: Lease) {
    return retried(RECORD_WRITE_RETRY, () => this.release(lease));
  }

  /**
   * Claims the send of the SQS message `messageId` to the DLQ, before it (DESIGN §5): of two
   * invocations dead-lettering it at once, one sends it. One conditional PutItem of its mark, taken
   * if the mark is absent or expired, or is a claim past its `claimExpiresAt` (`claimMs` from now:
   * the claimer's remaining time and a margin, after which it is dead, having sent or not). `sent`
   * if the mark says so (no write); `claimed-elsewhere` if another invocation's claim runs. A retry
   * after a lost answer finds its own token: claimed.
   * @internal
   */
  async claimDeadLetter(messageId: string, claimMs: number): Promise<DeadLetterClaim> {
    const nowMs = this.now();
    const token = randomUUID();
    try {
      await this.#documents.send(
        new PutCommand({
          TableName: this.tableName,
          Item: {
            id: deadLetterMarkId(messageId),
            claimToken: token,
            claimExpiresAt: nowMs + claimMs,
            [EXPIRES_AT_ATTRIBUTE]: this.#recordExpiresAt(nowMs),
          },
          ConditionExpression: `${ABSENT_OR_EXPIRED} OR (attribute_not_exists(deadLetteredAt) AND claimExpiresAt <= :nowMs)`,
          ExpressionAttributeValues: { ':nowSec': Math.floor(nowMs / 1000), ':nowMs': nowMs },
          ...RETURN_EXISTING,
        }),
      );
      return { status: 'claimed', token };
    } catch (error) {
      if (!(error instanceof ConditionalCheckFailedException)) throw error;
      const existing = existingItem(error) as Partial<DeadLetterMark> | undefined;
      if (existing?.claimToken === token) return { status: 'claimed', token };
      return existing?.deadLetteredAt === undefined ? { status: 'claimed-elsewhere' } : { status: 'sent' };
    }
  }

  /**
   * Gives up a claim whose send failed, so that the message's next delivery sends it at once rather
   * than after the claim expires. Only the claim under `token`, never a sent mark. @internal
   */
  async releaseDeadLetterClaim(messageId: string, token: string): Promise<void> {
    await this.#conditional(
      () =>
        this.#documents.send(
          new DeleteCommand({
            ...this.#record(deadLetterMarkId(messageId)),
            ConditionExpression: 'claimToken = :token AND attribute_not_exists(deadLetteredAt)',
            ExpressionAttributeValues: { ':token': token },
          }),
        ),
      () => false,
    );
  }

  /**
   * Marks the SQS message `messageId` as sent to the DLQ, for as long as a record lives: longer than
   * the message can come back (DESIGN §5). Unconditional, over the claim: a repeat only writes the
   * same mark again.
   * @internal
   */
  async markDeadLettered(messageId: string): Promise<void> {
    const nowMs = this.now();
    await this.#documents.send(
      new PutCommand({
        TableName: this.tableName,
        Item: {
          id: deadLetterMarkId(messageId),
          deadLetteredAt: nowMs,
          [EXPIRES_AT_ATTRIBUTE]: this.#recordExpiresAt(nowMs),
        },
      }),
    );
  }

  /**
   * Adds to the dead-letter log of `recordId` (`deadLetterLogId`) that the consumer sent its
   * message `messageId` to the DLQ, for `error`: one UpdateItem, on that path only. A full log
   * ({@link MAX_HISTORY_ENTRIES}) takes no more: its condition fails, and nothing is written.
   * @internal
   */
  async logDeadLetter(recordId: string, messageId: string, error: StoredError): Promise<void> {
    const now = this.now();
    await this.#conditional(
      () =>
        this.#documents.send(
          new UpdateCommand({
            ...this.#record(deadLetterLogId(recordId)),
            UpdateExpression: `SET ${APPEND_HISTORY}, ${EXPIRES_AT_ATTRIBUTE} = :expiresAt`,
            ConditionExpression: `attribute_not_exists(${HISTORY_ATTRIBUTE}) OR size(${HISTORY_ATTRIBUTE}) < :max`,
            ExpressionAttributeValues: {
              ...appendValues({ s: 'FAILED', t: now, m: messageId, x: error.name }),
              ':expiresAt': this.#recordExpiresAt(now),
              ':max': MAX_HISTORY_ENTRIES,
            },
          }),
        ),
      () => false, // a full log: nothing is written
    );
  }

  /**
   * Transactional mode: the business writes and a COMPLETED record commit together or not at all.
   * The record goes first; if its condition cancelled the transaction, this is a duplicate and the
   * existing record comes back. A business write's own condition failing is reported as that.
   * A client request token makes the SDK's retry of a transaction whose answer was lost succeed
   * without applying it twice (DynamoDB remembers the token for 10 minutes).
   * @internal
   */
  async commitTransaction(input: {
    id: string;
    payloadHash: string;
    result?: string;
    resultBytes?: number;
    writes: readonly TransactionWrite[];
    /** The delivery it commits for, named in the record's history. */
    delivery?: Delivery;
  }): Promise<TransactionResult> {
    const now = this.now();
    const recordExpiresAt = this.#recordExpiresAt(now);
    try {
      await this.#documents.send(
        new TransactWriteCommand({
          ClientRequestToken: randomUUID(),
          TransactItems: [
            {
              Put: {
                TableName: this.tableName,
                Item: {
                  id: input.id,
                  status: 'COMPLETED',
                  payloadHash: input.payloadHash,
                  result: input.result,
                  resultBytes: input.resultBytes,
                  attempts: 1,
                  expiresAt: recordExpiresAt,
                  updatedAt: now,
                  [HISTORY_ATTRIBUTE]: [
                    { s: 'COMPLETED', t: now, a: 1, ...deliveryFields(input.delivery, true) },
                  ],
                },
                ConditionExpression: ABSENT_OR_EXPIRED,
                ExpressionAttributeValues: { ':nowSec': Math.floor(now / 1000) },
                ...RETURN_EXISTING,
              },
            },
            ...input.writes,
          ],
        }),
      );
      return { committed: true, recordExpiresAt };
    } catch (error) {
      if (!(error instanceof TransactionCanceledException)) throw error;
      const [recordReason, ...writeReasons] = error.CancellationReasons ?? [];
      if (recordReason?.Code === 'ConditionalCheckFailed' && recordReason.Item) {
        return { committed: false, existing: unmarshall(recordReason.Item) as IdempotencyRecord };
      }
      const reasons = writeReasons.map((reason, index) => ({
        index,
        code: reason.Code ?? 'Unknown',
        message: reason.Message,
      }));
      // An invalid write (an item grown past 400 KB) is not a business rule that said no.
      const invalid = reasons.filter((reason) => reason.code === 'ValidationError');
      if (invalid.length > 0) {
        const detail = invalid
          .map((reason) => `write ${reason.index}: ${reason.message ?? reason.code}`)
          .join('; ');
        throw new InvalidRecordWriteError(input.id, new Error(detail));
      }
      const failures = reasons.filter((reason) => reason.code === 'ConditionalCheckFailed');
      if (failures.length > 0) throw new TransactionConditionFailedError(input.id, failures);
      throw error; // TransactionConflict, throttling: the caller decides whether to retry
    }
  }

  /**
   * An update fenced on the lease: only the lease's owner, while the record is IN_PROGRESS, may
   * write it. A condition failing because our own earlier try (applied, its answer lost, retried by
   * the SDK) already wrote this very status is a success; the token stays on the record for that.
   */
  #fencedUpdate(
    lease: Lease,
    status: RecordStatus,
    fields: Record<string, unknown>,
    remove: readonly string[] = [],
  ): Promise<boolean> {
    return this.#conditional(
      () =>
        this.#documents.send(
          new UpdateCommand({
            ...this.#fencedUpdateInput(lease, status, fields, remove),
            ...RETURN_EXISTING,
          }),
        ),
      (error) => {
        const existing = existingItem(error);
        return existing?.status === status && existing.leaseToken === lease.token;
      },
    );
  }

  /**
   * Sends a conditional write: true once it is applied. When its condition fails, what `failed`
   * makes of that (with ALL_OLD, the record in the way: {@link existingItem}); any other error is
   * thrown.
   */
  async #conditional<T>(
    write: () => Promise<unknown>,
    failed: (error: ConditionalCheckFailedException) => T,
  ): Promise<true | T> {
    try {
      await write();
      return true;
    } catch (error) {
      if (!(error instanceof ConditionalCheckFailedException)) throw error;
      return failed(error);
    }
  }

  /**
   * Makes a live record last at least until `untilSec` (epoch seconds), so that it outlives the
   * dedup horizon of a copy of its key that is going back to SQS (DESIGN §2). Whatever its status:
   * only the lifetime changes. A record that is absent, already expired or already lives long
   * enough is left as it is (false). One conditional UpdateItem.
   * @internal
   */
  keepUntil(id: string, untilSec: number): Promise<boolean> {
    return this.#conditional(
      () =>
        this.#documents.send(
          new UpdateCommand({
            ...this.#record(id),
            UpdateExpression: 'SET expiresAt = :until',
            // A record past its expiresAt is dead though not yet deleted: it must stay dead.
            ConditionExpression: 'attribute_exists(id) AND expiresAt > :nowSec AND expiresAt < :until',
            ExpressionAttributeValues: { ':until': untilSec, ':nowSec': Math.floor(this.now() / 1000) },
          }),
        ),
      () => false,
    );
  }

  /** The UpdateItem of {@link #fencedUpdate}: sets `status` and the fields given, fenced on the lease. */
  #fencedUpdateInput(
    lease: Lease,
    status: RecordStatus,
    fields: Record<string, unknown>,
    remove: readonly string[] = [],
  ) {
    const present = Object.entries(fields).filter(([, value]) => value !== undefined);
    const names: Record<string, string> = { ...STATUS_NAMES };
    const now = this.now();
    const error = fields.error as StoredError | undefined;
    const deadLettered = fields[DEAD_LETTERED_MESSAGE_ID] as string | undefined;
    const entry: HistoryEntry = {
      s: status,
      t: now,
      a: lease.attempt,
      l: shortToken(lease.token),
      ...(error ? { x: error.name } : {}),
      ...(deadLettered ? { d: deadLettered } : {}),
    };
    const values: Record<string, unknown> = {
      ':status': status,
      ':inProgress': IN_PROGRESS,
      ':token': lease.token,
      ':nowMs': now,
      ':attempt': lease.attempt,
      ...appendValues(entry),
    };
    // The run's count too: a lease taken without counting it is counted by its outcome.
    const sets = ['#status = :status', 'updatedAt = :nowMs', 'attempts = :attempt', APPEND_HISTORY];
    for (const [name, value] of present) {
      names[`#${name}`] = name;
      values[`:${name}`] = value;
      sets.push(`#${name} = :${name}`);
    }
    return {
      ...this.#record(lease.id),
      // The outcome is the record's now: the marks of a lease taken ahead say nothing more.
      UpdateExpression: `SET ${sets.join(', ')} REMOVE ${[...remove, 'leaseExpiresAt', UNSTARTED, '#after'].join(', ')}`,
      ConditionExpression: FENCED,
      ExpressionAttributeNames: { ...names, '#after': AFTER },
      ExpressionAttributeValues: values,
    };
  }

  /** The UpdateItem of a start mark: removes `unstarted`, fenced on the lease. */
  #startMark(lease: Lease) {
    return {
      ...this.#record(lease.id),
      UpdateExpression: `SET updatedAt = :nowMs REMOVE ${UNSTARTED}`,
      ConditionExpression: FENCED,
      ExpressionAttributeNames: STATUS_NAMES,
      ExpressionAttributeValues: { ':inProgress': IN_PROGRESS, ':token': lease.token, ':nowMs': this.now() },
    };
  }

  /**
   * The record an acquire's write found in its way. Any other failure means the SDK gave up, and one
   * of its tries may have been applied: it gives back a lease that is perhaps ours, so that no
   * at-most-once delivery later finds it expired and parks it IN_DOUBT, and rethrows.
   */
  async #existingAfterFailedAcquire(error: unknown, id: string, token: string): Promise<IdempotencyRecord> {
    if (!(error instanceof ConditionalCheckFailedException)) {
      await this.releaseWithRetries({ id, token } as Lease);
      throw error;
    }
    const existing = existingItem(error);
    if (!existing) throw error;
    return existing;
  }

  /** The table and key of the record (or mark, or log) `id`: what each request of it starts with. */
  #record(id: string) {
    return { TableName: this.tableName, Key: { id } };
  }

  #recordExpiresAt(nowMs: number): number {
    return Math.floor(nowMs / 1000) + this.ttlSeconds;
  }
}

/**
 * How a write adds `entry` to a record's history: appended (one request, whatever the history is),
 * or, on a record whose history is full, written whole as {@link trimmedHistory} says. Only an
 * acquire trims: each run of a record starts with one, and adds at most a few entries after it.
 */
function historyUpdate(
  existing: readonly HistoryEntry[] | undefined,
  entry: HistoryEntry,
): { expression: string; values: Record<string, unknown> } {
  const trimmed = trimmedHistory(existing, entry);
  if (trimmed) return { expression: `${HISTORY_ATTRIBUTE} = :history`, values: { ':history': trimmed } };
  return { expression: APPEND_HISTORY, values: appendValues(entry) };
}

/**
 * The acquire's UpdateItem condition, judged on the record its PutItem found: false saves a write
 * that would fail. The record may change in between; the UpdateItem's own condition decides then.
 */
function mayTakeLease(
  existing: IdempotencyRecord,
  nowMs: number,
  input: { payloadHash: string; takeOverExpiredLease: boolean; takeOverUnstarted?: string },
): boolean {
  if ((existing.expiresAt ?? Number.POSITIVE_INFINITY) <= Math.floor(nowMs / 1000)) return true;
  if (existing.payloadHash !== input.payloadHash) return false;
  if (existing.status === 'FAILED') return true;
  if (existing.status !== IN_PROGRESS || (existing.leaseExpiresAt ?? 0) > nowMs) return false;
  if (input.takeOverExpiredLease) return true;
  return (
    existing.unstarted !== undefined &&
    (existing.after === undefined ||
      (input.takeOverUnstarted !== undefined && existing.leaseToken === input.takeOverUnstarted))
  );
}

/** DynamoDBDocumentClient leaves the item of a failed condition marshalled: unmarshall it here. */
function existingItem(error: unknown): IdempotencyRecord | undefined {
  if (!(error instanceof ConditionalCheckFailedException) || !error.Item) return undefined;
  return unmarshall(error.Item as Record<string, AttributeValue>) as IdempotencyRecord;
}
