import type { MetricUnit as MetricUnitName } from '@aws-lambda-powertools/metrics/types';
import { NO_SPAN, type OncelySpan } from '../common/tracing.js';
import type { StoredError } from '../idempotency/errors.js';
import type { IdempotencyObserver } from '../idempotency/observer.js';
import type { ConsumerHooks, RecordHookEvent } from './hooks.js';
import type { ConsumerMessage, RecordLogFields } from './message.js';

/** The CloudWatch metrics (EMF, unit Count) a consumer emits, by what they count. */
export const CONSUMER_METRICS = {
  /** The record's effect ran now. */
  processed: 'RecordsProcessed',
  /** A duplicate of a completed record: acknowledged without running. */
  duplicate: 'DuplicateRecords',
  /** The key was used before with another payload (the record also goes to the DLQ). */
  conflict: 'KeyConflicts',
  /** Another invocation holds the key's lease: the record fails and comes back. */
  inProgressElsewhere: 'RecordsInProgressElsewhere',
  /** A record became IN_DOUBT (at-most-once): an operator must resolve it. */
  inDoubt: 'RecordsInDoubt',
  /** A non-retryable record sent to the DLQ at once. */
  sentToDlq: 'RecordsSentToDlq',
  /** Sending a non-retryable record to the DLQ failed: it fails and comes back. */
  dlqSendFailed: 'DlqSendsFailed',
  /** Sent to the DLQ, but the mark that stops a second send could not be written (DESIGN §5). */
  dlqMarkNotWritten: 'DlqMarksNotWritten',
  /** A retryable failure: SQS redelivers the record. */
  failed: 'RecordsFailed',
  /** Not run because an earlier record of its group failed. */
  skipped: 'RecordsSkippedAfterGroupFailure',
  /**
   * Run and recorded while an earlier record of its group was being recorded, which then failed:
   * not acknowledged, so that SQS redelivers the group in order; the redelivery is a duplicate.
   */
  heldBack: 'RecordsHeldBack',
  /**
   * An unacknowledged copy's key has a record that could not be made to outlive the copy's dedup
   * horizon (DESIGN §2): the copy's next delivery tries again.
   */
  recordLifeNotExtended: 'RecordLivesNotExtended',
  /** The effect happened but its COMPLETED write kept failing: not acknowledged; the redelivery settles it. */
  completionWriteFailed: 'CompletionWritesFailed',
  /** Recording a failure failed: not acknowledged; the record stays IN_PROGRESS until its lease expires. */
  failureWriteFailed: 'FailureWritesFailed',
  /** The effect happened and is recorded, but its result was too large to store for duplicates. */
  resultNotStored: 'ResultsNotStored',
  /** Not started: the invocation had too little time left to finish it (DESIGN §5, the deadline). */
  deferredAtDeadline: 'RecordsDeferredAtDeadline',
  /** Published longer ago than the dedup horizon (DESIGN §2): sent to the DLQ, never run. */
  pastDedupHorizon: 'RecordsPastDedupHorizon',
  /** A fenced write found another owner: this invocation's lease had been taken over. */
  leaseLost: 'LeasesLost',
  /**
   * Standard queues: a failed record's visibility could not be changed to its retry delay (DESIGN
   * §5.1); it still fails, and comes back after the queue's visibility timeout instead.
   */
  visibilityChangeFailed: 'VisibilityChangesFailed',
} as const;

export type ConsumerMetric = keyof typeof CONSUMER_METRICS;

/** Powertools' `MetricUnit.Count`, named by its value: importing the constant would load Powertools' metrics with the consumer. */
const COUNT: MetricUnitName = 'Count';

/**
 * The part of Powertools' `Metrics` a consumer uses. A sink you pass is yours to publish (with
 * Powertools' `logMetrics` middleware, say); the one the consumer creates by default it publishes itself.
 */
export interface MetricsSink {
  /** Counts `value` of the metric `name` (one of `CONSUMER_METRICS`), as Powertools' `Metrics` does. */
  addMetric(name: string, unit: MetricUnitName, value: number): unknown;
}

/** Structured fields of a log line. */
export type LogFields = Record<string, unknown>;

/**
 * The logger a consumer writes to: Powertools' `Logger` is one, and so is any object with these
 * methods. Each record's fields are added to every call about it.
 */
export interface ConsumerLogger {
  /** Writes a line at DEBUG level. */
  debug(message: string, ...extra: LogFields[]): void;
  /** Writes a line at INFO level: a record processed, a duplicate acknowledged. */
  info(message: string, ...extra: LogFields[]): void;
  /** Writes a line at WARN level: a record that failed, or went to the DLQ. */
  warn(message: string, ...extra: LogFields[]): void;
  /** Writes a line at ERROR level: what an operator must look at. */
  error(message: string, ...extra: LogFields[]): void;
}

/**
 * How a record's processing in this invocation ended, as its span says (`oncely.outcome`, DESIGN §6):
 * its effect ran now, it was a duplicate of a completed record, it is IN_DOUBT, it went to the DLQ,
 * it was not started for lack of time, or it was given back to SQS to be redelivered.
 */
export type RecordOutcome =
  | 'applied'
  | 'duplicate'
  | 'in-doubt'
  | 'dead-lettered'
  | 'deferred'
  | 'given-back';

/**
 * Logs, metrics and span of one record. It is the idempotency core's observer for that record, so
 * what the core reports without throwing is logged with the record's key, group and message id too.
 */
export class RecordTelemetry implements IdempotencyObserver {
  /** This record's logger: every line carries its key, group and message id, and its span's ids once it started. */
  readonly logger: ConsumerLogger;
  /** The logger's fields, which the span's ids join when it starts. */
  readonly #fields: LogFields;
  readonly #startSpan: () => OncelySpan;
  #span: OncelySpan | undefined;
  #spanEnded = false;
  /** The record it was routed to, once routed: a message that did not route has none. */
  #recordId: string | undefined;

  constructor(
    logger: ConsumerLogger,
    fields: RecordLogFields,
    private readonly metrics: MetricsSink,
    /** The user's hooks, and the message they are told about (none for a record that did not parse). */
    private readonly hooked?: { hooks: ConsumerHooks; message: ConsumerMessage },
    /** Starts the record's span; none without tracing. */
    startSpan: () => OncelySpan = () => NO_SPAN,
  ) {
    this.#fields = { ...fields };
    this.logger = recordLogger(logger, this.#fields);
    this.#startSpan = startSpan;
  }

  static forRecord(
    base: { logger: ConsumerLogger; metrics: MetricsSink },
    fields: RecordLogFields,
    hooks?: { hooks: ConsumerHooks | undefined; message: ConsumerMessage | undefined },
    startSpan?: () => OncelySpan,
  ): RecordTelemetry {
    const hooked = hooks?.hooks && hooks.message ? { hooks: hooks.hooks, message: hooks.message } : undefined;
    return new RecordTelemetry(base.logger, fields, base.metrics, hooked, startSpan);
  }

  /**
   * Names the record the message was routed to (`namespace#key`): its span says it when it ends, and
   * the log lines from now on (`recordId`), by which a message's story is found from a log line.
   */
  nameRecord(id: string): void {
    this.#recordId = id;
    this.#fields.recordId = id;
  }

  /** Starts the record's span when its turn starts (DESIGN §6); later calls do nothing. */
  beginSpan(): void {
    if (this.#span) return;
    this.#span = this.#startSpan();
    Object.assign(this.#fields, this.#span.logFields);
  }

  /** Runs `work` inside the record's span: the spans of the effect's own calls nest under it. */
  withinSpan<T>(work: () => T): T {
    return (this.#span ?? NO_SPAN).within(work);
  }

  /**
   * Ends the record's span with its outcome, and `error` when one failed it; a record that had no
   * turn gets its span now. The record's log lines after it carry the outcome (`outcome`). Only the
   * first call counts: a record's verdict is its first.
   */
  endSpan(outcome: RecordOutcome, error?: unknown): void {
    if (this.#spanEnded) return;
    this.#spanEnded = true;
    // The lines logged from now on say it, as `outcome`: what a stack's console lists messages by.
    this.#fields.outcome = outcome;
    this.beginSpan();
    const span = this.#span as OncelySpan;
    span.setAttributes({ 'oncely.outcome': outcome, 'oncely.record.id': this.#recordId });
    if (error !== undefined) span.fail(error);
    span.end();
  }

  /** Calls the user's hook, if any, without awaiting it; what it throws is logged, never the record's. */
  hook(name: 'onClaim' | 'onDuplicate' | 'onComplete', idempotencyKey: string): void;
  hook(name: 'onInDoubt', idempotencyKey: string, reason: StoredError): void;
  hook(name: keyof ConsumerHooks, idempotencyKey: string, reason?: StoredError): void {
    const hook = this.hooked?.hooks[name] as ((event: RecordHookEvent) => unknown) | undefined;
    if (!hook || !this.hooked) return;
    const failed = (error: unknown) =>
      this.logger.error(`the ${name} hook failed`, { idempotencyKey, error });
    try {
      const event = { message: this.hooked.message, idempotencyKey, ...(reason ? { reason } : {}) };
      Promise.resolve(hook.call(this.hooked.hooks, event)).catch(failed);
    } catch (error) {
      failed(error);
    }
  }

  /** What was counted for this record: the standard consumer reads from it why a record failed (DESIGN §5.1). */
  readonly counted = new Set<ConsumerMetric>();

  count(metric: ConsumerMetric): void {
    this.counted.add(metric);
    this.metrics.addMetric(CONSUMER_METRICS[metric], COUNT, 1);
  }

  completionWriteFailed(id: string, error: unknown): void {
    this.count('completionWriteFailed');
    this.logger.error(
      'the effect happened but its completion could not be recorded: the message is not acknowledged, and its ' +
        'redelivery settles the record once the lease expired',
      { idempotencyKey: id, error },
    );
  }

  resultNotStored(id: string, bytes: number): void {
    this.count('resultNotStored');
    this.logger.warn(
      'the effect happened and is recorded, but its result was too large to store for duplicates',
      {
        idempotencyKey: id,
        bytes,
      },
    );
  }

  leaseLost(id: string, operation: string): void {
    this.count('leaseLost');
    this.logger.warn('lease lost: another invocation took this record over; nothing was overwritten', {
      idempotencyKey: id,
      operation,
    });
  }

  inDoubt(id: string, reason: StoredError): void {
    this.count('inDoubt');
    this.hook('onInDoubt', id, reason);
    this.logger.warn(
      'the record is IN_DOUBT: its effect may or may not have happened; an operator must resolve it',
      {
        idempotencyKey: id,
        reason,
      },
    );
  }

  failureWriteFailed(id: string, error: unknown): void {
    this.count('failureWriteFailed');
    this.logger.error('could not record the failure; the record stays IN_PROGRESS until its lease expires', {
      idempotencyKey: id,
      error,
    });
  }
}

/**
 * A logger whose every line carries `fields`, added to each call: the same JSON as a Powertools child
 * logger, without building a Logger (and a Console) per record, which a profile showed costs ~7 % of
 * a consumer's CPU.
 */
function recordLogger(logger: ConsumerLogger, fields: LogFields): ConsumerLogger {
  const withFields =
    (level: 'debug' | 'info' | 'warn' | 'error') =>
    (message: string, ...extra: LogFields[]) =>
      logger[level](message, Object.assign({ ...fields }, ...extra));
  return {
    debug: withFields('debug'),
    info: withFields('info'),
    warn: withFields('warn'),
    error: withFields('error'),
  };
}
