import type { MiddlewareObj } from '@middy/core';
import type { Context, SQSBatchResponse, SQSEvent } from 'aws-lambda';
import type { KnownKeys } from '../common/known-keys.js';
import { IdempotencyConfigurationError, type IdempotencyInProgressError } from '../idempotency/errors.js';
import type { BatchEnd } from './batch-end.js';
import {
  type BatchRecord,
  batchMiddleware,
  consumersByOptions,
  receiveBatch,
  reportDeferred,
  reportSkipped,
} from './batch-entry.js';
import {
  CONSUMER_OPTION_KEYS,
  ConsumerSetup,
  refuseUnknownConsumerKeys,
  type Telemetry,
} from './consumer-setup.js';
import { DeadlineGuard } from './deadline.js';
import { DEFAULT_MAX_CONCURRENT_RECORDS } from './environment.js';
import { FifoQueueRecordError } from './errors.js';
import type { FifoBatchOptions } from './fifo-batch.js';
import { type MessageGroupPlan, planGroups } from './group-plan.js';
import { type RecordStep, runGroups } from './group-runner.js';
import { waitForKey } from './in-flight-wait.js';
import { parseEnvelopeRecord, type ReceivedRecord } from './message.js';
import { processRecord, type RecordProcessorOptions, routeRecord } from './record-processor.js';
import {
  DEFAULT_RETRY_DELAYS,
  MAX_VISIBILITY_SECONDS,
  type RetryDelays,
  retryDelaySeconds,
  soonDelaySeconds,
  visibilityLimitMs,
} from './retry-delay.js';
import { keepRecordsOfReturningCopies } from './returning-copies.js';
import { type DelayedReturn, delayReturns } from './visibility-changes.js';

/**
 * How a standard (or fair) queue's consumer processes its batches (DESIGN §5.1): `FifoBatchOptions`
 * but its groups, and how many records run at once and how soon failed ones come back. Only
 * `operations` is required where the environment (`CONSUMER_ENVIRONMENT`) is set.
 */
export interface StandardBatchOptions extends Omit<FifoBatchOptions, 'maxConcurrentGroups'> {
  /**
   * How many records of a batch run at once, never more than the batch has. Copies of one key in a
   * batch run one after another: the first runs, the others answer from its record. The default
   * is twice the SDK's 50 sockets: they stay busy, a request waits behind at most one other, and at
   * most 100 effects are in memory at once (DESIGN §5.1).
   * @default `MAX_CONCURRENT_RECORDS`, else 100
   */
  maxConcurrentRecords?: number;
  /**
   * A record that fails retryably comes back after a delay whose ceiling is this many seconds after
   * its first delivery, doubling with each further one, up to `retryMaxDelaySeconds`; the delay is
   * between half the ceiling and all of it (jitter). Set with `ChangeMessageVisibility` on the queue
   * `deadLetterQueue.sourceQueueUrl` (`QUEUE_URL`): without it, failed records come back after the
   * queue's visibility timeout.
   * @default 5
   */
  retryBaseDelaySeconds?: number;
  /**
   * The cap of a failed record's retry delay, in seconds (at most 43,200, SQS's 12 hours). A delay
   * is also cut at what is left of the 12 hours SQS counts from the record's receive.
   * @default 300
   */
  retryMaxDelaySeconds?: number;
  /**
   * A record whose key another invocation is processing (or one not started for lack of time) comes
   * back within this many seconds on its first delivery (half of it to all of it, jittered) instead
   * of the visibility timeout, and then answers from the key's record. Doubles with each further
   * delivery, up to `retryMaxDelaySeconds`, so that a key held for long does not use up the queue's
   * `maxReceiveCount`.
   * @default 2
   */
  inProgressRetrySeconds?: number;
  /**
   * How long a record whose key another invocation is processing waits for it (reading the key's
   * record, 100 ms apart at first, doubling to 1 s), then answers from its record, instead of
   * coming back after `inProgressRetrySeconds`. Never past the invocation's deadline less the
   * reserve a record needs. 0: it does not wait.
   * @default 0
   */
  inFlightWaitMs?: number;
}

/**
 * Middy middleware that processes a standard or fair SQS queue's batch with per-record idempotency
 * (DESIGN §5.1): records run at once, up to `maxConcurrentRecords`, in no order; copies of one key
 * in the batch take effect once; failed records come back after a jittered, capped backoff, and
 * records whose key is in flight elsewhere within seconds. It answers with the partial batch
 * response (the event source mapping needs `ReportBatchItemFailures`). Use it last, as `fifoBatch`.
 *
 * @example
 * ```ts
 * import middy from '@middy/core';
 * import { leaseOperation, standardBatch } from 'oncely/consumer';
 *
 * const welcome = leaseOperation({ namespace: 'welcome', mode: 'at-least-once', run: ({ payload }) => sendMail(payload) });
 * export const handler = middy().use(standardBatch({ operations: { UserSignedUp: welcome } }));
 * ```
 */
export function standardBatch(
  options: StandardBatchOptions,
): MiddlewareObj<SQSEvent, SQSBatchResponse, Error, Context> {
  // Made now, so that the options are checked now; the environment is read on the first batch.
  return batchMiddleware('oncely-standard-batch', consumerFor(options));
}

/**
 * What `standardBatch` does, for a handler without Middy. Pass the same options object on every
 * invocation: the consumer's clients and learnt deadline are kept for the container's life by it.
 *
 * @example
 * ```ts
 * const options: StandardBatchOptions = { operations: { UserSignedUp: welcome } };
 * export const handler = (event: SQSEvent, context: Context) => processStandardBatch(event, context, options);
 * ```
 */
export function processStandardBatch(
  event: SQSEvent,
  lambdaContext: Context,
  options: StandardBatchOptions,
): Promise<SQSBatchResponse> {
  return consumerFor(options).processBatch(event, lambdaContext);
}

// Pure: a bundle that never uses this middleware drops its module (a call at module scope would keep it).
const consumerFor = /* @__PURE__ */ consumersByOptions(
  (options: StandardBatchOptions) => new StandardBatchConsumer(options),
);

/** One standard consumer for the container's life. */
class StandardBatchConsumer {
  readonly #options: StandardBatchOptions;
  readonly #setup: ConsumerSetup<'maxConcurrentRecords'>;
  readonly #deadline: DeadlineGuard;
  readonly #delays: RetryDelays;

  constructor(options: StandardBatchOptions) {
    // Written here rather than beside the options: esbuild keeps an unused object spread at the
    // top of a module, in every bundle of the package's consumer entry, FIFO ones too.
    refuseUnknownConsumerKeys('standardBatch', options, {
      ...CONSUMER_OPTION_KEYS,
      maxConcurrentRecords: true,
      retryBaseDelaySeconds: true,
      retryMaxDelaySeconds: true,
      inProgressRetrySeconds: true,
      inFlightWaitMs: true,
    } satisfies KnownKeys<StandardBatchOptions>);
    const { maxConcurrentRecords, retryBaseDelaySeconds, retryMaxDelaySeconds, inProgressRetrySeconds } =
      options;
    this.#setup = new ConsumerSetup(
      options,
      maxConcurrentRecords === undefined ? ['maxConcurrentRecords'] : [],
      {
        maxConcurrentRecords,
        retryBaseDelaySeconds,
        retryMaxDelaySeconds,
        inProgressRetrySeconds,
      },
    );
    this.#delays = {
      baseSeconds: retryBaseDelaySeconds ?? DEFAULT_RETRY_DELAYS.baseSeconds,
      maxSeconds: retryMaxDelaySeconds ?? DEFAULT_RETRY_DELAYS.maxSeconds,
      soonSeconds: inProgressRetrySeconds ?? DEFAULT_RETRY_DELAYS.soonSeconds,
    };
    for (const [name, value] of Object.entries(this.#delays)) {
      if (value > MAX_VISIBILITY_SECONDS) {
        throw new IdempotencyConfigurationError(
          `${name} must be at most ${MAX_VISIBILITY_SECONDS} (SQS's longest visibility timeout), not ${value}.`,
        );
      }
    }
    const { inFlightWaitMs } = options;
    if (inFlightWaitMs !== undefined && !(Number.isInteger(inFlightWaitMs) && inFlightWaitMs >= 0)) {
      throw new IdempotencyConfigurationError(
        `inFlightWaitMs must be a whole number of milliseconds, not ${inFlightWaitMs}.`,
      );
    }
    this.#options = options;
    this.#deadline = new DeadlineGuard(options.recordTimeReserveMs);
  }

  processBatch(event: SQSEvent, lambdaContext: Context): Promise<SQSBatchResponse> {
    return this.#setup.processBatch(event, lambdaContext, (telemetry) =>
      this.#processRecords(telemetry, event, lambdaContext),
    );
  }

  async #processRecords(
    telemetry: Telemetry,
    event: SQSEvent,
    lambdaContext: Context,
  ): Promise<SQSBatchResponse> {
    // A property, not a dimension, of the metrics it publishes itself: the same metrics as FIFO's,
    // told apart in the logs without splitting what an alarm on `service` watches (DESIGN §5.1).
    telemetry.ownMetrics?.addMetadata('queueType', 'standard');
    const fifo = event.Records.find((record) => record.eventSourceARN?.endsWith('.fifo'));
    if (fifo) throw new FifoQueueRecordError(fifo.messageId, fifo.eventSourceARN);
    const { processor, environment } = this.#setup.settings();
    const maxConcurrentRecords =
      this.#options.maxConcurrentRecords ??
      environment.maxConcurrentRecords ??
      DEFAULT_MAX_CONCURRENT_RECORDS;
    const parse = this.#options.parse ?? parseEnvelopeRecord;
    const inFlightWaitMs = this.#options.inFlightWaitMs ?? 0;
    const records = receiveBatch(event, 'standard', parse, telemetry, this.#options.hooks);
    try {
      const deadline = this.#deadline;
      const budgetMs = lambdaContext.getRemainingTimeInMillis();
      const batchStartedMs = Date.now();
      let anyStarted = false;
      const deadLettered = new Set<string>();
      // A chain per key: the runner runs a chain's records one at a time and skips the rest of it
      // after a failure, so a key's copies wait for its first one and never run it twice in a batch.
      const chains = planGroups(records, ({ received }) => chainKeyOf(received, processor));
      const report = await runGroups(chains, maxConcurrentRecords, (_chain, signal) => ({
        processRecord: async ({ received, telemetry }): Promise<RecordStep> => {
          if (!deadline.allowsStart(lambdaContext, budgetMs, !anyStarted)) return 'deferred';
          anyStarted = true;
          const started = Date.now();
          try {
            const waitForHeldKey =
              inFlightWaitMs > 0
                ? (held: IdempotencyInProgressError) =>
                    waitForKey(held, {
                      store: processor.store,
                      maxWaitMs: inFlightWaitMs,
                      lambdaContext,
                      reserveMs: deadline.reserveMs(budgetMs),
                      signal,
                    })
                : undefined;
            return await processRecord(
              received,
              telemetry,
              { lambdaContext, signal, waitForKey: waitForHeldKey, deadLettered },
              processor,
            );
          } finally {
            deadline.recordFinished(Date.now() - started);
          }
        },
      }));
      reportSkipped(
        report.skipped,
        'not run: an earlier copy of its key in this batch failed; SQS redelivers it',
      );
      reportDeferred(report.deferred, lambdaContext.getRemainingTimeInMillis(), deadline.reserveMs(budgetMs));
      const unacknowledged = [...report.failed, ...report.skipped, ...report.deferred];
      const end: BatchEnd = { concurrency: maxConcurrentRecords, lambdaContext, logger: telemetry.logger };
      await Promise.all([
        keepRecordsOfReturningCopies(unacknowledged, processor, end),
        this.#delayReturns(
          unacknowledged,
          comingBackSoon(chains, report.skipped),
          batchStartedMs,
          processor,
          end,
        ),
      ]);
      const failed = new Set(unacknowledged);
      return {
        batchItemFailures: records
          .filter((record) => failed.has(record))
          .map(({ received }) => ({ itemIdentifier: received.record.messageId })),
      };
    } finally {
      // A whole-batch failure leaves records without a verdict: SQS redelivers every one of them.
      for (const { telemetry } of records) telemetry.endSpan('given-back');
    }
  }

  /**
   * DESIGN §5.1: the records `soon` come back within seconds; the others after their backoff; each
   * within what SQS's 12 hours from its receive leave (`visibilityLimitMs`).
   */
  async #delayReturns(
    records: readonly BatchRecord[],
    soon: ReadonlySet<BatchRecord>,
    batchStartedMs: number,
    processor: RecordProcessorOptions,
    end: BatchEnd,
  ): Promise<void> {
    const queue = processor.deadLetterQueue.sourceQueue;
    if (!queue || records.length === 0) return;
    const returns = records.map((batchRecord): DelayedReturn => {
      const {
        received: { record },
        telemetry,
      } = batchRecord;
      const receiveCount = Number(record.attributes.ApproximateReceiveCount);
      return {
        messageId: record.messageId,
        receiptHandle: record.receiptHandle,
        seconds: soon.has(batchRecord)
          ? soonDelaySeconds(receiveCount, this.#delays)
          : retryDelaySeconds(receiveCount, this.#delays),
        limitMs: visibilityLimitMs(record.attributes, batchStartedMs),
        telemetry,
      };
    });
    await delayReturns(queue, returns, end);
  }
}

/**
 * DESIGN §5.1: the records that come back within seconds rather than after the failure backoff:
 * one whose key another invocation holds, one not started at the deadline, and the copies skipped
 * behind a copy whose key is held elsewhere — nothing of theirs failed, and they answer from the
 * key's record once its holder is done, as that copy does.
 */
function comingBackSoon(
  chains: readonly MessageGroupPlan<BatchRecord>[],
  skipped: readonly BatchRecord[],
): Set<BatchRecord> {
  const skippedRecords = new Set(skipped);
  const soon = new Set<BatchRecord>();
  for (const { records } of chains) {
    const heldElsewhere = records.some(({ telemetry }) => telemetry.counted.has('inProgressElsewhere'));
    for (const record of records) {
      const { counted } = record.telemetry;
      if (
        counted.has('inProgressElsewhere') ||
        counted.has('deferredAtDeadline') ||
        (heldElsewhere && skippedRecords.has(record))
      ) {
        soon.add(record);
      }
    }
  }
  return soon;
}

/** The record's id (`namespace#key`), which its copies share; its message id for one that will not run. */
function chainKeyOf(received: ReceivedRecord, processor: RecordProcessorOptions): string {
  try {
    const { operation, message } = routeRecord(received, processor);
    return `record:${operation.recordIdOf(message)}`;
  } catch {
    return `message:${received.record.messageId}`;
  }
}
