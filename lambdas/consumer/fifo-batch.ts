import type { MiddlewareObj } from '@middy/core';
import type { Context, SQSBatchResponse, SQSEvent } from 'aws-lambda';
import type { KnownKeys } from '../common/known-keys.js';
import type { LeaseStore } from '../idempotency/lease-store.js';
import type { DynamoDBIdempotencyStore } from '../idempotency/store.js';
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
import type { DeadLetterQueueOptions } from './dead-letter-queue.js';
import { DeadlineGuard } from './deadline.js';
import { StandardQueueRecordError } from './errors.js';
import { GroupLeases } from './group-leases.js';
import { planGroups } from './group-plan.js';
import { type RecordStep, runGroups } from './group-runner.js';
import type { ConsumerHooks } from './hooks.js';
import { type MessageParser, parseEnvelopeRecord } from './message.js';
import type { ConsumerOperation } from './operations.js';
import { leaseTurnOf, processRecord, type RecordProcessorOptions } from './record-processor.js';
import { keepRecordsOfReturningCopies } from './returning-copies.js';
import type { ConsumerLogger, MetricsSink } from './telemetry.js';

/**
 * How a FIFO consumer processes its batches. Only `operations` is required in a function the
 * OncelyPipeline construct deploys (or the sandbox runs): the rest defaults from the environment
 * it sets (`CONSUMER_ENVIRONMENT`), read on the first batch.
 */
export interface FifoBatchOptions {
  /** The operation for each message type; a message of another type goes to the DLQ. */
  operations: Readonly<Record<string, ConsumerOperation>>;
  /**
   * Where the records are kept: the idempotency table, or a `ValkeyIdempotencyStore` for the lease
   * operations' records and DLQ marks (transactional operations then need a `transactionalStore`:
   * `TransactionalStoreError`).
   * @default with `IDEMPOTENCY_VALKEY_ENDPOINT` set (OncelyPipeline's `leaseRecords: 'valkey'`), a
   * `ValkeyIdempotencyStore` on that ElastiCache Serverless cache, over TLS with IAM authentication as
   * the user `IDEMPOTENCY_VALKEY_USER_ID` (iovalkey, imported on the first batch); otherwise a
   * `DynamoDBIdempotencyStore` on the table `IDEMPOTENCY_TABLE_NAME`, through a `DynamoDBClient` with
   * the function's region and credentials. Either's records live `IDEMPOTENCY_TTL_SECONDS` (30 days
   * when unset).
   */
  store?: LeaseStore;
  /**
   * Where transactional operations keep their records when `store` is not DynamoDB's: their record
   * commits in one DynamoDB transaction with their writes, so it must be a `DynamoDBIdempotencyStore`.
   * @default `store` when it is a `DynamoDBIdempotencyStore`; without a `store`, the DynamoDB store on
   * `IDEMPOTENCY_TABLE_NAME` (also when the lease records are in Valkey); otherwise none, and a
   * transactional operation is refused (`TransactionalStoreError`)
   */
  transactionalStore?: DynamoDBIdempotencyStore;
  /**
   * Where non-retryable records go at once.
   * @default the queue `DLQ_URL` through an `SQSClient` with the function's region and credentials,
   * with `QUEUE_URL` (when set) as `sourceQueueUrl`
   */
  deadLetterQueue?: DeadLetterQueueOptions;
  /**
   * Powertools' `Logger` or any object with its methods.
   * @default a Powertools `Logger` (with `telemetry: 'off'`, none: nothing is logged)
   */
  logger?: ConsumerLogger;
  /**
   * Where the consumer counts (`CONSUMER_METRICS`). One you pass is yours to publish (with
   * Powertools' `logMetrics` middleware).
   * @default a Powertools `Metrics`, which the consumer publishes itself at the end of each batch
   * (namespace `POWERTOOLS_METRICS_NAMESPACE`, dimension `service` from `POWERTOOLS_SERVICE_NAME`);
   * with `telemetry: 'off'`, none: nothing is counted
   */
  metrics?: MetricsSink;
  /**
   * Whether the consumer makes Powertools' `Logger` and `Metrics` for the `logger` and `metrics` you
   * leave unset. It imports them only then, when the consumer is made (`fifoBatch()`, in your
   * module's init; or the first `processFifoBatch` call, whose batch then waits for them), so with
   * `'off'`, or both of them passed, no Powertools module is loaded at all.
   * @default `'powertools'`
   */
  telemetry?: ConsumerTelemetry;
  /**
   * How many message groups run at once.
   * @default `MAX_CONCURRENT_GROUPS`, else 10 (a whole batch)
   */
  maxConcurrentGroups?: number;
  /**
   * A record's failed runs (retryable failures, or invocations that died holding its lease) after
   * which the consumer sends it to the DLQ, in its group, at its next retryable failure (or, for an
   * at-least-once record whose last run died, at its next delivery, unrun); a redriven copy counts
   * afresh (DESIGN §5). The record's own runs, not SQS's receive count, which also rises
   * while it waits behind a failing record of its group. Keep the queue's `maxReceiveCount` at
   * least this × the batch size, so that SQS moves only records that failed themselves.
   * @default `MAX_ATTEMPTS`, else 5
   */
  maxAttempts?: number;
  /**
   * A record is not started with less than this many milliseconds of the invocation left (DESIGN
   * §5); it and the rest of its group come back. The first record of a batch always starts.
   * @default learnt per container: twice the 90th percentile of its last 20 records, at least 1 s,
   * at most half the batch's time
   */
  recordTimeReserveMs?: number;
  /**
   * The dedup horizon's safety margin in seconds (DESIGN §2): a message published longer ago than
   * the store's TTL less this is dead-lettered as `PastDedupHorizon`, never run.
   * @default 3_600 (an hour), or a tenth of the TTL if that is shorter
   */
  dedupHorizonMarginSeconds?: number;
  /**
   * Reads a record's body, for bodies that are not Oncely envelopes (raw producers, EventBridge).
   * Whatever it throws sends the record to the DLQ at once. The group is always the record's
   * MessageGroupId.
   * @default `parseEnvelopeRecord`: an Oncely envelope (DESIGN §2)
   */
  parse?: MessageParser;
  /**
   * Your functions for a record's claim, duplicate, completion and IN_DOUBT, for logs or metrics;
   * not awaited, and what they throw is logged (DESIGN §5.1).
   * @default none
   */
  hooks?: ConsumerHooks;
}

const FIFO_BATCH_OPTION_KEYS = {
  ...CONSUMER_OPTION_KEYS,
  maxConcurrentGroups: true,
} satisfies KnownKeys<FifoBatchOptions>;

/** Whether a consumer makes Powertools' `Logger` and `Metrics` for those you do not pass: `FifoBatchOptions.telemetry`. */
export type ConsumerTelemetry = 'powertools' | 'off';

export const DEFAULT_MAX_CONCURRENT_GROUPS = 10;

/**
 * Middy middleware that processes an SQS FIFO batch record by record, with per-record idempotency
 * and DESIGN §5's ordering rules, and answers with the partial batch response (the event source
 * mapping needs `ReportBatchItemFailures`). It does its work in `after`, so use it last: Powertools
 * middlewares used before it then log with the Lambda context and publish the metrics you pass it.
 *
 * @example
 * ```ts
 * import middy from '@middy/core';
 * import { fifoBatch, leaseOperation } from 'oncely/consumer';
 *
 * const welcome = leaseOperation({ namespace: 'welcome', mode: 'at-least-once', run: ({ payload }) => sendMail(payload) });
 * export const handler = middy().use(fifoBatch({ operations: { UserSignedUp: welcome } }));
 * ```
 */
export function fifoBatch(
  options: FifoBatchOptions,
): MiddlewareObj<SQSEvent, SQSBatchResponse, Error, Context> {
  // Made now, so that the options are checked now; the environment is read on the first batch.
  return batchMiddleware('oncely-fifo-batch', consumerFor(options));
}

/**
 * What `fifoBatch` does, for a handler without Middy: processes the batch and returns the partial
 * batch response; throws only what fails the whole batch. What the consumer keeps for the
 * container's life (its clients, its learnt deadline reserve) belongs to `options`: pass the same
 * object on every invocation.
 *
 * @example
 * ```ts
 * const options: FifoBatchOptions = { operations: { UserSignedUp: welcome } };
 * export const handler = (event: SQSEvent, context: Context) => processFifoBatch(event, context, options);
 * ```
 */
export function processFifoBatch(
  event: SQSEvent,
  lambdaContext: Context,
  options: FifoBatchOptions,
): Promise<SQSBatchResponse> {
  return consumerFor(options).processBatch(event, lambdaContext);
}

// Pure: a bundle that never uses this middleware drops its module (a call at module scope would keep it).
const consumerFor = /* @__PURE__ */ consumersByOptions(
  (options: FifoBatchOptions) => new FifoBatchConsumer(options),
);

interface BatchSettings {
  processor: RecordProcessorOptions;
  maxConcurrentGroups: number;
}

/** One consumer for the container's life: its defaults, made on the first batch, and its deadline's learning. */
class FifoBatchConsumer {
  readonly #options: FifoBatchOptions;
  readonly #setup: ConsumerSetup<'maxConcurrentGroups'>;
  readonly #deadline: DeadlineGuard;
  readonly #parse: MessageParser;

  constructor(options: FifoBatchOptions) {
    refuseUnknownConsumerKeys('fifoBatch', options, FIFO_BATCH_OPTION_KEYS);
    this.#setup = new ConsumerSetup(
      options,
      options.maxConcurrentGroups === undefined ? ['maxConcurrentGroups'] : [],
      { maxConcurrentGroups: options.maxConcurrentGroups },
    );
    this.#options = options;
    this.#deadline = new DeadlineGuard(options.recordTimeReserveMs);
    this.#parse = options.parse ?? parseEnvelopeRecord;
  }

  processBatch(event: SQSEvent, lambdaContext: Context): Promise<SQSBatchResponse> {
    return this.#setup.processBatch(event, lambdaContext, (telemetry) =>
      this.#processRecords(this.#settingsOnce(), telemetry, event, lambdaContext),
    );
  }

  /** Reads only the variables the options leave to the environment; a failed read is tried again next batch. */
  #settingsOnce(): BatchSettings {
    const { processor, environment } = this.#setup.settings();
    return {
      processor,
      maxConcurrentGroups:
        this.#options.maxConcurrentGroups ?? environment.maxConcurrentGroups ?? DEFAULT_MAX_CONCURRENT_GROUPS,
    };
  }

  async #processRecords(
    settings: BatchSettings,
    telemetry: Telemetry,
    event: SQSEvent,
    lambdaContext: Context,
  ): Promise<SQSBatchResponse> {
    // A fair queue's records have groups too: only the queue's ARN tells them apart (DESIGN §5.1).
    const standard = event.Records.find(
      ({ eventSourceARN }) => eventSourceARN && !eventSourceARN.endsWith('.fifo'),
    );
    if (standard) throw new StandardQueueRecordError(standard.messageId, standard.eventSourceARN);
    const deadline = this.#deadline;
    const records = receiveBatch(event, 'fifo', this.#parse, telemetry, this.#options.hooks);
    try {
      let anyStarted = false;
      const budgetMs = lambdaContext.getRemainingTimeInMillis();
      const deadLettered = new Set<string>();
      const report = await runGroups(
        planGroups(records, ({ received }) => received.groupId),
        settings.maxConcurrentGroups,
        (group, signal, stopped) => {
          const invocation = { lambdaContext, signal, deadLettered };
          // The group's lease-mode records take their leases together when its first record starts.
          // A completion starts the next lease only if that record will run: the group goes on
          // (DESIGN §4.1), and the deadline lets it start.
          const leases = new GroupLeases(
            group.records,
            group.records.map(({ received, telemetry }) =>
              leaseTurnOf(received, telemetry, invocation, settings.processor),
            ),
            () => !stopped.aborted && deadline.allowsStart(lambdaContext, budgetMs, false),
          );
          const processGroupRecord = async (record: BatchRecord): Promise<RecordStep> => {
            // A record its predecessor's completion already marked started was checked then.
            if (!leases.started(record) && !deadline.allowsStart(lambdaContext, budgetMs, !anyStarted)) {
              return 'deferred';
            }
            anyStarted = true;
            leases.open();
            const started = Date.now();
            const finished = () => deadline.recordFinished(Date.now() - started);
            let step: RecordStep;
            try {
              const { received, telemetry } = record;
              const turn = leases.turnOf(record);
              step = await processRecord(received, telemetry, invocation, settings.processor, turn);
            } catch (error) {
              finished();
              throw error;
            }
            // A record's time includes its record write, even when the next record runs meanwhile.
            if (typeof step === 'string') finished();
            else step.settling.then(finished, finished);
            return step;
          };
          return {
            processRecord: processGroupRecord,
            done() {
              return leases.close();
            },
          };
        },
      );
      reportSkipped(
        report.skipped,
        'not run: an earlier record of its group failed; SQS redelivers it in order',
      );
      reportDeferred(report.deferred, lambdaContext.getRemainingTimeInMillis(), deadline.reserveMs(budgetMs));
      for (const { telemetry } of report.heldBack) {
        telemetry.count('heldBack');
        telemetry.logger.info(
          'processed, but an earlier record of its group could not be recorded: not acknowledged, so that ' +
            'SQS redelivers the group in order; its redelivery is a duplicate',
        );
      }
      const unacknowledged = new Set([
        ...report.failed,
        ...report.skipped,
        ...report.deferred,
        ...report.heldBack,
      ]);
      await keepRecordsOfReturningCopies([...unacknowledged], settings.processor, {
        concurrency: settings.maxConcurrentGroups,
        lambdaContext,
        logger: telemetry.logger,
      });
      return {
        batchItemFailures: records
          .filter((record) => unacknowledged.has(record))
          .map(({ received }) => ({ itemIdentifier: received.record.messageId })),
      };
    } finally {
      // A whole-batch failure leaves records without a verdict: SQS redelivers every one of them.
      for (const { telemetry } of records) telemetry.endSpan('given-back');
    }
  }
}
