import type { Logger } from '@aws-lambda-powertools/logger';
import type { MiddlewareObj } from '@middy/core';
import type { Context, SQSBatchResponse, SQSEvent } from 'aws-lambda';
import { type DynamoDbIdempotencyStore, IdempotencyConfigurationError } from '../idempotency/index.js';
import { DeadLetterQueue, type DeadLetterQueueOptions } from './dead-letter-queue.js';
import { DeadlineGuard } from './deadline.js';
import { planGroups } from './group-plan.js';
import { runGroups } from './group-runner.js';
import { logFieldsOf, receiveRecord } from './message.js';
import type { ConsumerOperation } from './operations.js';
import { processRecord } from './record-processor.js';
import { type MetricsSink, RecordTelemetry } from './telemetry.js';

export interface FifoBatchOptions {
  store: DynamoDbIdempotencyStore;
  /** The operation for each message type; a message of another type goes to the DLQ. */
  operations: Readonly<Record<string, ConsumerOperation>>;
  deadLetterQueue: DeadLetterQueueOptions;
  logger: Logger;
  /** Powertools' Metrics, published by its `logMetrics` middleware. */
  metrics: MetricsSink;
  /** How many message groups run at once; 10 (a whole batch) by default. */
  maxConcurrentGroups?: number;
  /**
   * A record is not started with less than this many milliseconds of the invocation left (DESIGN
   * §5); it and the rest of its group come back. By default learnt per container — twice the 90th
   * percentile of its last 20 records, at least 1 s, at most half the batch's time — and the first
   * record of a batch always starts.
   */
  recordTimeReserveMs?: number;
  /**
   * The dedup horizon's safety margin in seconds (DESIGN §2): a message published longer ago than
   * the store's TTL less this is dead-lettered as `PastDedupHorizon`, never run. By default an hour,
   * or a tenth of the TTL if that is shorter.
   */
  dedupHorizonMarginSeconds?: number;
}

export const DEFAULT_MAX_CONCURRENT_GROUPS = 10;

/**
 * Middy middleware that processes an SQS FIFO batch record by record, with per-record idempotency
 * and DESIGN §5's ordering rules, and answers with the partial batch response (the event source
 * mapping needs `ReportBatchItemFailures`). It does its work in `after`, so use it last: the
 * Powertools middlewares used before it then log with the Lambda context and publish its metrics.
 */
export function fifoBatch(
  options: FifoBatchOptions,
): MiddlewareObj<SQSEvent, SQSBatchResponse, Error, Context> {
  const maxConcurrentGroups = options.maxConcurrentGroups ?? DEFAULT_MAX_CONCURRENT_GROUPS;
  if (!Number.isInteger(maxConcurrentGroups) || maxConcurrentGroups < 1) {
    throw new IdempotencyConfigurationError(
      `maxConcurrentGroups must be a positive integer, not ${maxConcurrentGroups}.`,
    );
  }
  const deadLetterQueue = new DeadLetterQueue(options.deadLetterQueue);
  const processor = {
    store: options.store,
    operations: options.operations,
    deadLetterQueue,
    horizon: { ttlSeconds: options.store.ttlSeconds, marginSeconds: options.dedupHorizonMarginSeconds },
  };
  const deadline = new DeadlineGuard(options.recordTimeReserveMs);

  const processBatch = async (event: SQSEvent, lambdaContext: Context): Promise<SQSBatchResponse> => {
    const records = event.Records.map((sqsRecord) => {
      const received = receiveRecord(sqsRecord);
      return { received, telemetry: RecordTelemetry.forRecord(options, logFieldsOf(received)) };
    });
    let anyStarted = false;
    const budgetMs = lambdaContext.getRemainingTimeInMillis();
    const report = await runGroups(
      planGroups(records, ({ received }) => received.groupId),
      maxConcurrentGroups,
      async ({ received, telemetry }, signal) => {
        if (!deadline.allowsStart(lambdaContext, budgetMs, !anyStarted)) return 'deferred';
        anyStarted = true;
        const started = Date.now();
        try {
          return await processRecord(received, telemetry, { lambdaContext, signal }, processor);
        } finally {
          deadline.recordFinished(Date.now() - started);
        }
      },
    );
    for (const { telemetry } of report.skipped) {
      telemetry.count('skipped');
      telemetry.logger.info('not run: an earlier record of its group failed; SQS redelivers it in order');
    }
    for (const { telemetry } of report.deferred) {
      telemetry.count('deferredAtDeadline');
      telemetry.logger.info(
        'not started: too little of the invocation is left to finish it; SQS redelivers it',
        {
          remainingMs: lambdaContext.getRemainingTimeInMillis(),
          reserveMs: deadline.reserveMs(budgetMs),
        },
      );
    }
    const unacknowledged = new Set([...report.failed, ...report.skipped, ...report.deferred]);
    return {
      batchItemFailures: records
        .filter((record) => unacknowledged.has(record))
        .map(({ received }) => ({ itemIdentifier: received.record.messageId })),
    };
  };

  return {
    name: 'oncely-fifo-batch',
    after: async (request) => {
      try {
        request.response = await processBatch(request.event, request.context);
      } catch (error) {
        options.logger.error('the whole batch failed: SQS redelivers every record of it', {
          error,
          messageIds: request.event.Records.map((record) => record.messageId),
        });
        throw error;
      }
    },
  };
}
