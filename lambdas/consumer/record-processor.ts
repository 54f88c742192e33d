import type { Context } from 'aws-lambda';
import { type DedupHorizon, isPastDedupHorizon } from '../common/dedup-horizon.js';
import {
  IdempotencyConflictError,
  IdempotencyInProgressError,
  isRetryable,
  toStoredError,
} from '../idempotency/errors.js';
import { DEFAULT_LEASE_MARGIN_MS } from '../idempotency/lease.js';
import type { LeaseStore } from '../idempotency/lease-store.js';
import type { DynamoDBIdempotencyStore } from '../idempotency/store.js';
import type { DeadLetterQueue, DeadLetterSend } from './dead-letter-queue.js';
import {
  AttemptsExhaustedError,
  IdempotencyStoreUnavailableError,
  PastDedupHorizonError,
  UnknownMessageTypeError,
} from './errors.js';
import type { GroupTurn } from './group-leases.js';
import type { RecordStep } from './group-runner.js';
import type { LeaseTurn } from './lease-turn.js';
import type { ConsumerMessage, ReceivedRecord } from './message.js';
import type { OperationOutcome } from './operation-runtime.js';
import { type ConsumerOperation, LeaseOperation } from './operations.js';
import type { RecordTelemetry } from './telemetry.js';

export interface RecordProcessorOptions {
  store: LeaseStore;
  /** Transactional operations' store, when `store` is not DynamoDB's (DESIGN §3.1). */
  transactionalStore?: DynamoDBIdempotencyStore;
  operations: Readonly<Record<string, ConsumerOperation>>;
  deadLetterQueue: DeadLetterQueue;
  horizon: DedupHorizon;
  /** Failed runs after which a record goes to the DLQ (DESIGN §5). */
  maxAttempts: number;
}

/** What a record's turn runs in: the Lambda invocation, and the batch's abort signal. */
export interface RecordInvocation {
  lambdaContext: Context;
  signal: AbortSignal;
  /**
   * Waits, bounded, for a key another invocation holds (standard queues, DESIGN §5.1): true if it is
   * no longer held, and the record is tried once more. Unset: the record fails at once.
   */
  waitForKey?(held: IdempotencyInProgressError): Promise<boolean>;
  /**
   * The record ids whose record this batch sent to the DLQ for failing `maxAttempts` times: a later
   * copy of the key in the batch is a copy of that message, not a redriven one, so it does not run.
   */
  deadLettered: Set<string>;
}

/**
 * One record, start to verdict: route it by type, run its operation with idempotency, and turn
 * what happened into DESIGN §5's verdict. A non-retryable failure goes to the DLQ at once and
 * counts as a success, so it does not block its group. A lease-mode record of a group runs as its
 * group's `turn` (its lease may have been taken ahead), and its verdict may come later
 * (`settling`), when its completion is written. Throws only what fails the whole batch.
 */
export async function processRecord(
  received: ReceivedRecord,
  telemetry: RecordTelemetry,
  invocation: RecordInvocation,
  options: RecordProcessorOptions,
  turn?: GroupTurn,
): Promise<RecordStep> {
  /** Set for a record whose failed runs its receive count stands for: one that writes no record when it fails. */
  let receiveCount: number | undefined;
  /** Set once routed: its record's id. */
  let routedId: string | undefined;
  const failed = async (error: unknown) => {
    // Once the batch fails as a whole, SQS redelivers every record: nothing else to decide here.
    if (error instanceof IdempotencyStoreUnavailableError || invocation.signal.aborted) {
      telemetry.endSpan('given-back', error);
      throw error;
    }
    const verdict = exhausted(error, receiveCount, options);
    // The DLQ send's claim outlives this invocation, whose death it must survive (DESIGN §5).
    const claimMs = invocation.lambdaContext.getRemainingTimeInMillis() + DEFAULT_LEASE_MARGIN_MS;
    const step = await failure(received, verdict, telemetry, options.deadLetterQueue, claimMs, routedId);
    if (routedId && step === 'succeeded' && verdict instanceof AttemptsExhaustedError) {
      invocation.deadLettered.add(routedId);
    }
    return step;
  };
  telemetry.beginSpan();
  try {
    const { operation, message } = routeRecord(received, options);
    const id = operation.recordIdOf(message);
    routedId = id;
    telemetry.nameRecord(id);
    if (invocation.deadLettered.has(id)) {
      telemetry.endSpan('dead-lettered');
      telemetry.logger.info(
        'a copy of a message this batch sent to the DLQ for failing maxAttempts times: acknowledged, not run; ' +
          'the DLQ holds its key',
      );
      return 'succeeded';
    }
    const runtime = {
      store: options.store,
      transactionalStore: options.transactionalStore,
      telemetry,
      maxAttempts: options.maxAttempts,
      ...invocation,
    };
    if (!(operation instanceof LeaseOperation)) receiveCount = message.receiveCount;
    // Inside the record's span: the spans of the effect's own calls nest under it.
    const run = () =>
      telemetry.withinSpan(() =>
        turn && operation instanceof LeaseOperation
          ? turn.turn.run(turn.successor)
          : operation.execute(message, runtime),
      );
    const step = await run().catch(async (error: unknown) => {
      // Once: a key taken again by a third invocation meanwhile fails this record after all.
      if (error instanceof IdempotencyInProgressError && (await invocation.waitForKey?.(error))) {
        telemetry.logger.info('waited for the key another invocation held: it is free now, tried again');
        return run();
      }
      throw error;
    });
    if (typeof step !== 'string') {
      const settling = step.settling.then((outcome) => {
        reportSuccess(outcome, telemetry, id);
        return 'succeeded' as const;
      }, failed);
      return { settling };
    }
    reportSuccess(step, telemetry, id);
    return 'succeeded';
  } catch (error) {
    return failed(error);
  }
}

/**
 * The lease turn of a record whose operation is lease-mode, for its group to take its lease ahead;
 * undefined for any other record, and for one that will not run (it goes to the DLQ at once).
 */
export function leaseTurnOf(
  received: ReceivedRecord,
  telemetry: RecordTelemetry,
  invocation: RecordInvocation,
  options: RecordProcessorOptions,
): LeaseTurn | undefined {
  try {
    const { operation, message } = routeRecord(received, options);
    if (!(operation instanceof LeaseOperation)) return undefined;
    return operation.turn(message, {
      store: options.store,
      telemetry,
      maxAttempts: options.maxAttempts,
      ...invocation,
    });
  } catch {
    return undefined; // its turn meets the same error and sends it to the DLQ
  }
}

/** The record's operation and message, or the non-retryable error that sends it to the DLQ at once. */
export function routeRecord(
  received: ReceivedRecord,
  options: RecordProcessorOptions,
): { operation: ConsumerOperation; message: ConsumerMessage } {
  if (received.error) throw received.error;
  const { message } = received;
  // Own properties only: a message of type "constructor" must not find Object's.
  if (!Object.hasOwn(options.operations, message.type)) {
    throw new UnknownMessageTypeError(message.type, Object.keys(options.operations));
  }
  // Before any request: past the horizon, even a lookup could not prove it is not a repeat.
  if (isPastDedupHorizon(message.publishedAt, options.horizon, options.store.now())) {
    throw new PastDedupHorizonError(message.publishedAt, options.horizon.ttlSeconds);
  }
  return { operation: options.operations[message.type] as ConsumerOperation, message };
}

function reportSuccess(outcome: OperationOutcome, telemetry: RecordTelemetry, id: string): void {
  switch (outcome) {
    case 'executed':
      telemetry.count('processed');
      telemetry.hook('onComplete', id);
      telemetry.endSpan('applied');
      telemetry.logger.info('processed');
      return;
    case 'duplicate':
      telemetry.count('duplicate');
      telemetry.hook('onDuplicate', id);
      telemetry.endSpan('duplicate');
      telemetry.logger.info('duplicate of a completed record: acknowledged without running');
      return;
    case 'in-doubt':
      // Counted where the record became IN_DOUBT (the observer), not on every delivery of it.
      telemetry.endSpan('in-doubt');
      telemetry.logger.warn(
        'the record is IN_DOUBT: acknowledged without running; an operator must resolve it',
      );
      return;
  }
}

/**
 * A lease-mode record counts its failed runs in its record (`LeaseTurn`). A transactional one
 * writes no record until it commits, so its receive count stands for them: it may include
 * deliveries in which it was skipped behind another record, but only a failure of its own, at or
 * past `maxAttempts` receives, sends it to the DLQ (DESIGN §5).
 */
function exhausted(
  error: unknown,
  receiveCount: number | undefined,
  options: RecordProcessorOptions,
): unknown {
  if (receiveCount === undefined || receiveCount < options.maxAttempts) return error;
  if (!isRetryable(error) || error instanceof IdempotencyInProgressError) return error;
  return new AttemptsExhaustedError(receiveCount, error);
}

async function failure(
  received: ReceivedRecord,
  error: unknown,
  telemetry: RecordTelemetry,
  deadLetterQueue: DeadLetterQueue,
  claimMs: number,
  recordId: string | undefined,
): Promise<'succeeded' | 'failed'> {
  // The span ends with the verdict before the line that tells it, which then carries the outcome.
  // A key another invocation holds is no failure of this record's: its span is not failed for it.
  if (error instanceof IdempotencyInProgressError) {
    telemetry.count('inProgressElsewhere');
    telemetry.endSpan('given-back');
    telemetry.logger.warn(
      'another invocation is processing this key: the record fails and SQS redelivers it',
      {
        error,
      },
    );
    return 'failed';
  }
  if (isRetryable(error)) {
    telemetry.count('failed');
    telemetry.endSpan('given-back', error);
    telemetry.logger.warn('the record failed and SQS redelivers it', { error });
    return 'failed';
  }
  if (error instanceof IdempotencyConflictError) telemetry.count('conflict');
  if (error instanceof PastDedupHorizonError) telemetry.count('pastDedupHorizon');
  let sent: DeadLetterSend;
  try {
    const stored = toStoredError(error);
    sent = await deadLetterQueue.send(received.record, received.groupId, stored, claimMs, recordId);
  } catch (sendError) {
    telemetry.count('dlqSendFailed');
    telemetry.endSpan('given-back', error);
    telemetry.logger.error(
      'could not send a non-retryable record to the DLQ: it fails and SQS redelivers it',
      {
        error,
        sendError,
      },
    );
    return 'failed';
  }
  if (sent === 'claimed-elsewhere') {
    telemetry.count('inProgressElsewhere');
    telemetry.endSpan('given-back', error);
    telemetry.logger.warn(
      'another invocation is sending this record to the DLQ: it fails and SQS redelivers it, then acknowledged ' +
        'if it was sent, or sent by that delivery once the claim expired',
      { error },
    );
    return 'failed';
  }
  // A failure that succeeds is a record sent to the DLQ, now or by an earlier delivery.
  telemetry.endSpan('dead-lettered', error);
  if (sent === 'already-sent') {
    telemetry.logger.info('already sent to the DLQ by an earlier delivery of this message: not sent again', {
      error,
    });
    return 'succeeded';
  }
  telemetry.count('sentToDlq');
  telemetry.logger.warn(
    error instanceof AttemptsExhaustedError
      ? 'sent to the DLQ: it failed maxAttempts times, and its group goes on'
      : 'sent to the DLQ at once: no retry can fix this record',
    { error },
  );
  if (sent === 'sent-unmarked') {
    telemetry.count('dlqMarkNotWritten');
    telemetry.logger.warn(
      'sent to the DLQ, but its mark could not be written: should this message come back after its claim ' +
        'expired (its delete failed, or its invocation died), it is sent to the DLQ again',
    );
  }
  return 'succeeded';
}
