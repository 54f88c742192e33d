import { Logger } from '@aws-lambda-powertools/logger';
import { injectLambdaContext } from '@aws-lambda-powertools/logger/middleware';
import { Metrics } from '@aws-lambda-powertools/metrics';
import { logMetrics } from '@aws-lambda-powertools/metrics/middleware';
import { DynamoDBClient } from '@aws-sdk/client-dynamodb';
import type { SQSClient } from '@aws-sdk/client-sqs';
import { DynamoDBDocumentClient } from '@aws-sdk/lib-dynamodb';
import middy from '@middy/core';
import type { Context, SQSBatchResponse, SQSEvent } from 'aws-lambda';
// The package's modules, as the example consumer imports them: (5b) profiles them as compiled.
import { fifoBatch, leaseOperation } from 'oncely/consumer';
import { DynamoDBIdempotencyStore, type IdempotencyMode, type LeaseStore } from 'oncely/idempotency';
import { SEND_NOTIFICATION } from '../notification-events.js';
import { STOCK_RECEIVED } from '../stock-events.js';
import {
  requiredVariable,
  type ShopEvent,
  type ShopSettings,
  shopEventEffect,
  shopSettingsFromEnvironment,
} from './shop-events.js';

export interface LeaseConsumerOptions extends ShopSettings {
  /** At-least-once by default. */
  mode?: IdempotencyMode;
  dynamodb: DynamoDBClient;
  /**
   * The DLQ's client and URL. Without them, fifoBatch's default, as the example consumer has it: the
   * queue `DLQ_URL`, through a client made when a record is first dead-lettered.
   */
  sqs?: SQSClient;
  dlqUrl?: string;
  idempotencyTableName: string;
  /**
   * Where the records are kept: the DynamoDB store on `idempotencyTableName` unless told (the Valkey
   * store, in bench/valkey-vs-dynamodb.ts).
   */
  store?: LeaseStore;
  logger: Logger;
  metrics: Metrics;
}

/**
 * The example consumer's middleware stack with the benchmark's events in lease mode instead of
 * transactional mode: acquire, the same effect as the Powertools consumer (the single ledger write,
 * or the notification's POST), complete. It has Powertools' request count per record, so beside it
 * what the batch does with those requests shows on its own.
 */
export function createLeaseConsumerHandler(options: LeaseConsumerOptions) {
  const { dynamodb, logger, metrics, mode = 'at-least-once' } = options;
  const effect = shopEventEffect(DynamoDBDocumentClient.from(dynamodb), options);
  return withTelemetry(logger, metrics).use(
    fifoBatch({
      store:
        options.store ??
        new DynamoDBIdempotencyStore({ client: dynamodb, tableName: options.idempotencyTableName }),
      logger,
      metrics,
      deadLetterQueue:
        options.sqs && options.dlqUrl ? { client: options.sqs, queueUrl: options.dlqUrl } : undefined,
      operations: leaseOperations(effect, mode),
    }),
  );
}

/** The example consumer's Middy stack before its batch middleware: Powertools Logger and Metrics. */
export function withTelemetry(logger: Logger, metrics: Metrics) {
  return middy<SQSEvent, SQSBatchResponse>().use(injectLambdaContext(logger)).use(logMetrics(metrics));
}

/** The benchmark's event types in lease mode, each running `effect` under its lease. */
export function leaseOperations(effect: (event: ShopEvent) => Promise<void>, mode: IdempotencyMode) {
  return {
    [STOCK_RECEIVED]: leaseOperation({ namespace: 'stock', mode, run: effect }),
    [SEND_NOTIFICATION]: leaseOperation({ namespace: 'notify', mode, run: effect }),
  };
}

/** The Lambda entry's variable for its mode: `at-least-once` (when unset) or `at-most-once`. */
export const LEASE_MODE_VARIABLE = 'LEASE_MODE';

let configured: ReturnType<typeof createLeaseConsumerHandler> | undefined;

/**
 * The Lambda entry point, reading the example consumer's variables and its mode from
 * {@link LEASE_MODE_VARIABLE}; Logger and Metrics from Powertools' own variables. Built on the first
 * invocation.
 */
export async function handler(event: SQSEvent, context: Context): Promise<SQSBatchResponse> {
  configured ??= createLeaseConsumerHandler({
    mode: leaseModeFromEnvironment(),
    dynamodb: new DynamoDBClient({}),
    idempotencyTableName: requiredVariable('IDEMPOTENCY_TABLE_NAME'),
    logger: new Logger(),
    metrics: new Metrics(),
    ...shopSettingsFromEnvironment(),
  });
  return configured(event, context);
}

function leaseModeFromEnvironment(): IdempotencyMode {
  const mode = process.env[LEASE_MODE_VARIABLE] || 'at-least-once';
  if (mode !== 'at-least-once' && mode !== 'at-most-once') {
    throw new Error(
      `${LEASE_MODE_VARIABLE} must be at-least-once or at-most-once, not ${JSON.stringify(mode)}`,
    );
  }
  return mode;
}
