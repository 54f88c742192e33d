import type { Logger } from '@aws-lambda-powertools/logger';
import { injectLambdaContext } from '@aws-lambda-powertools/logger/middleware';
import type { Metrics } from '@aws-lambda-powertools/metrics';
import { logMetrics } from '@aws-lambda-powertools/metrics/middleware';
import type { DynamoDBClient } from '@aws-sdk/client-dynamodb';
import type { SQSClient } from '@aws-sdk/client-sqs';
import { DynamoDBDocumentClient } from '@aws-sdk/lib-dynamodb';
import middy from '@middy/core';
import type { SQSBatchResponse, SQSEvent } from 'aws-lambda';
import { fifoBatch, leaseOperation } from '../../lambdas/consumer/index.js';
import { DynamoDBIdempotencyStore, type IdempotencyMode } from '../../lambdas/idempotency/index.js';
import { SEND_NOTIFICATION } from '../notification-events.js';
import { STOCK_RECEIVED } from '../stock-events.js';
import { type ShopSettings, shopEventEffect } from './shop-events.js';

export interface LeaseConsumerOptions extends ShopSettings {
  /** At-least-once by default. */
  mode?: IdempotencyMode;
  dynamodb: DynamoDBClient;
  sqs: SQSClient;
  idempotencyTableName: string;
  dlqUrl: string;
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
  return middy<SQSEvent, SQSBatchResponse>()
    .use(injectLambdaContext(logger))
    .use(logMetrics(metrics))
    .use(
      fifoBatch({
        store: new DynamoDBIdempotencyStore({ client: dynamodb, tableName: options.idempotencyTableName }),
        logger,
        metrics,
        deadLetterQueue: { client: options.sqs, queueUrl: options.dlqUrl },
        operations: {
          [STOCK_RECEIVED]: leaseOperation({ namespace: 'stock', mode, run: effect }),
          [SEND_NOTIFICATION]: leaseOperation({ namespace: 'notify', mode, run: effect }),
        },
      }),
    );
}
