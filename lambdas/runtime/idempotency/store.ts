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
  PutCommand,
  TransactWriteCommand,
  type TransactWriteCommandInput,
  UpdateCommand,
} from '@aws-sdk/lib-dynamodb';
import { unmarshall } from '@aws-sdk/util-dynamodb';
import { type StoredError, TransactionConditionFailedError } from './errors';
import {
  DEFAULT_RECORD_TTL_SECONDS,
  type IdempotencyRecord,
  isExpired,
  type KeptMessage,
  MAX_KEPT_MESSAGE_BYTES,
} from './record';

/** One business write of a transactional handler, in DynamoDBDocumentClient's format. */
export type TransactionWrite = NonNullable<TransactWriteCommandInput['TransactItems']>[number];

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
}

export type AcquireResult =
  | { acquired: true; lease: Lease }
  | { acquired: false; existing: IdempotencyRecord };

export type TransactionResult =
  | { committed: true; recordExpiresAt: number }
  | { committed: false; existing: IdempotencyRecord };

export interface IdempotencyStoreOptions {
  client: DynamoDBClient;
  tableName: string;
  /** Lifetime of a record; must outlive queue + DLQ retention. */
  ttlSeconds?: number;
  /** Clock in epoch milliseconds; tests move it to expire leases and records. */
  now?: () => number;
}

const IN_PROGRESS = 'IN_PROGRESS';
const STATUS_NAMES = { '#status': 'status' };
const ABSENT_OR_EXPIRED = 'attribute_not_exists(id) OR expiresAt <= :nowSec';

/**
 * The idempotency table (DESIGN §3). Every method is a single DynamoDB request; none reads first:
 * a failed condition returns the existing item in the error, which is all a caller needs.
 */
export class DynamoDbIdempotencyStore {
  readonly tableName: string;
  readonly ttlSeconds: number;
  readonly now: () => number;
  readonly #documents: DynamoDBDocumentClient;

  constructor(options: IdempotencyStoreOptions) {
    this.tableName = options.tableName;
    this.ttlSeconds = options.ttlSeconds ?? DEFAULT_RECORD_TTL_SECONDS;
    this.now = options.now ?? Date.now;
    this.#documents = DynamoDBDocumentClient.from(options.client, {
      marshallOptions: { removeUndefinedValues: true },
    });
  }

  /**
   * Takes the lease if the record is absent, expired or FAILED (or, with `takeOverExpiredLease`,
   * IN_PROGRESS past its lease) — each only for the same payload. One conditional PutItem.
   */
  async acquire(input: {
    id: string;
    payloadHash: string;
    leaseMs: number;
    takeOverExpiredLease: boolean;
  }): Promise<AcquireResult> {
    const now = this.now();
    const token = randomUUID();
    const leaseExpiresAt = now + input.leaseMs;
    const recordExpiresAt = this.#recordExpiresAt(now);
    const takeover = input.takeOverExpiredLease
      ? ' OR (#status = :inProgress AND leaseExpiresAt <= :nowMs AND payloadHash = :hash)'
      : '';
    try {
      const output = await this.#documents.send(
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
          },
          ConditionExpression: `${ABSENT_OR_EXPIRED} OR (#status = :failed AND payloadHash = :hash)${takeover}`,
          ExpressionAttributeNames: STATUS_NAMES,
          ExpressionAttributeValues: {
            ':nowSec': Math.floor(now / 1000),
            ':failed': 'FAILED',
            ':hash': input.payloadHash,
            ...(input.takeOverExpiredLease ? { ':inProgress': IN_PROGRESS, ':nowMs': now } : {}),
          },
          // The replaced item (if any) tells how many attempts came before, at no extra cost.
          ReturnValues: 'ALL_OLD',
          ReturnValuesOnConditionCheckFailure: 'ALL_OLD',
        }),
      );
      const previous = output.Attributes as IdempotencyRecord | undefined;
      const previousAttempts = previous && !isExpired(previous, now) ? (previous.attempts ?? 1) : 0;
      return {
        acquired: true,
        lease: {
          id: input.id,
          token,
          payloadHash: input.payloadHash,
          expiresAt: leaseExpiresAt,
          recordExpiresAt,
          attempt: previousAttempts + 1,
        },
      };
    } catch (error) {
      const existing = existingItem(error);
      if (!existing) throw error;
      return { acquired: false, existing };
    }
  }

  /** Records the effect as done. Returns false if the lease was lost (fencing). */
  complete(lease: Lease, outcome: { result?: string; resultBytes?: number }): Promise<boolean> {
    return this.#fencedUpdate(lease, 'COMPLETED', {
      result: outcome.result,
      resultBytes: outcome.resultBytes,
    });
  }

  /** Records a retryable failure: the next delivery may acquire the record again. */
  fail(lease: Lease, error: StoredError): Promise<boolean> {
    return this.#fencedUpdate(lease, 'FAILED', { error });
  }

  /** Records a permanent failure: duplicates get the same error. */
  reject(lease: Lease, error: StoredError): Promise<boolean> {
    return this.#fencedUpdate(lease, 'REJECTED', { error });
  }

  /**
   * Records that the effect may or may not have happened; only an operator moves it on. The
   * record keeps `message` (if it fits), so that the operator can run it again.
   */
  markInDoubt(lease: Lease, error: StoredError, message?: KeptMessage): Promise<boolean> {
    return this.#fencedUpdate(lease, 'IN_DOUBT', { error, message: keepable(message) });
  }

  /**
   * At-most-once: parks a record whose owner's lease expired without completion as IN_DOUBT,
   * fenced on that owner's token so a concurrent completion wins. False if something else won.
   * The record keeps `message` (the delivery that found it; if it fits), as with `markInDoubt`.
   */
  async parkExpiredLease(
    record: IdempotencyRecord,
    reason: StoredError,
    message?: KeptMessage,
  ): Promise<boolean> {
    const now = this.now();
    const kept = keepable(message);
    try {
      await this.#documents.send(
        new UpdateCommand({
          TableName: this.tableName,
          Key: { id: record.id },
          UpdateExpression: `SET #status = :inDoubt, #error = :error, updatedAt = :nowMs${kept ? ', #message = :message' : ''} REMOVE leaseToken`,
          ConditionExpression: '#status = :inProgress AND leaseToken = :token AND leaseExpiresAt <= :nowMs',
          ExpressionAttributeNames: {
            ...STATUS_NAMES,
            '#error': 'error',
            ...(kept ? { '#message': 'message' } : {}),
          },
          ExpressionAttributeValues: {
            ':inDoubt': 'IN_DOUBT',
            ':inProgress': IN_PROGRESS,
            ':token': record.leaseToken,
            ':error': reason,
            ':nowMs': now,
            ...(kept ? { ':message': kept } : {}),
          },
        }),
      );
      return true;
    } catch (error) {
      if (error instanceof ConditionalCheckFailedException) return false;
      throw error;
    }
  }

  /** Gives the record up untouched by any effect, so the next delivery starts afresh. */
  async release(lease: Lease): Promise<boolean> {
    try {
      await this.#documents.send(
        new DeleteCommand({
          TableName: this.tableName,
          Key: { id: lease.id },
          ConditionExpression: '#status = :inProgress AND leaseToken = :token',
          ExpressionAttributeNames: STATUS_NAMES,
          ExpressionAttributeValues: { ':inProgress': IN_PROGRESS, ':token': lease.token },
        }),
      );
      return true;
    } catch (error) {
      if (error instanceof ConditionalCheckFailedException) return false;
      throw error;
    }
  }

  /**
   * Transactional mode: the business writes and a COMPLETED record commit together or not at all.
   * The record goes first; if its condition cancelled the transaction, this is a duplicate and the
   * existing record comes back. A business write's own condition failing is reported as that.
   */
  async commitTransaction(input: {
    id: string;
    payloadHash: string;
    result?: string;
    resultBytes?: number;
    writes: readonly TransactionWrite[];
  }): Promise<TransactionResult> {
    const now = this.now();
    const recordExpiresAt = this.#recordExpiresAt(now);
    try {
      await this.#documents.send(
        new TransactWriteCommand({
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
                },
                ConditionExpression: ABSENT_OR_EXPIRED,
                ExpressionAttributeValues: { ':nowSec': Math.floor(now / 1000) },
                ReturnValuesOnConditionCheckFailure: 'ALL_OLD',
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
      const failures = writeReasons
        .map((reason, index) => ({ index, code: reason.Code ?? 'Unknown', message: reason.Message }))
        .filter((reason) => reason.code === 'ConditionalCheckFailed' || reason.code === 'ValidationError');
      if (failures.length > 0) throw new TransactionConditionFailedError(input.id, failures);
      throw error; // TransactionConflict, throttling: the caller decides whether to retry
    }
  }

  async #fencedUpdate(lease: Lease, status: string, fields: Record<string, unknown>): Promise<boolean> {
    const present = Object.entries(fields).filter(([, value]) => value !== undefined);
    const names: Record<string, string> = { ...STATUS_NAMES };
    const values: Record<string, unknown> = {
      ':status': status,
      ':inProgress': IN_PROGRESS,
      ':token': lease.token,
      ':attempts': lease.attempt,
      ':nowMs': this.now(),
    };
    const sets = ['#status = :status', 'attempts = :attempts', 'updatedAt = :nowMs'];
    for (const [name, value] of present) {
      names[`#${name}`] = name;
      values[`:${name}`] = value;
      sets.push(`#${name} = :${name}`);
    }
    try {
      await this.#documents.send(
        new UpdateCommand({
          TableName: this.tableName,
          Key: { id: lease.id },
          UpdateExpression: `SET ${sets.join(', ')} REMOVE leaseToken, leaseExpiresAt`,
          ConditionExpression: '#status = :inProgress AND leaseToken = :token',
          ExpressionAttributeNames: names,
          ExpressionAttributeValues: values,
        }),
      );
      return true;
    } catch (error) {
      if (error instanceof ConditionalCheckFailedException) return false;
      throw error;
    }
  }

  #recordExpiresAt(nowMs: number): number {
    return Math.floor(nowMs / 1000) + this.ttlSeconds;
  }
}

/** The message an IN_DOUBT record keeps, unless it is too large for the record. */
function keepable(message: KeptMessage | undefined): KeptMessage | undefined {
  if (!message || Buffer.byteLength(message.body, 'utf8') > MAX_KEPT_MESSAGE_BYTES) return undefined;
  return message;
}

/** DynamoDBDocumentClient leaves the item of a failed condition marshalled: unmarshall it here. */
function existingItem(error: unknown): IdempotencyRecord | undefined {
  if (!(error instanceof ConditionalCheckFailedException) || !error.Item) return undefined;
  return unmarshall(error.Item as Record<string, AttributeValue>) as IdempotencyRecord;
}
