import { Logger } from '@aws-lambda-powertools/logger';
import { injectLambdaContext } from '@aws-lambda-powertools/logger/middleware';
import { Metrics } from '@aws-lambda-powertools/metrics';
import { logMetrics } from '@aws-lambda-powertools/metrics/middleware';
import type { DynamoDBClient } from '@aws-sdk/client-dynamodb';
import type { SQSClient } from '@aws-sdk/client-sqs';
import middy from '@middy/core';
import type { SQSBatchResponse, SQSEvent } from 'aws-lambda';
import { fifoBatch } from '../../../src/consumer/index.js';
import { DynamoDbIdempotencyStore } from '../../../src/idempotency/index.js';
import type { ConsumerConfig } from './environment.js';
import { ledgerOperations } from './ledger.js';
import { notificationOperation } from './notifications.js';

export interface ConsumerDependencies {
  config: ConsumerConfig;
  dynamodb: DynamoDBClient;
  sqs: SQSClient;
  /** Powertools reads its settings from the environment when these are not given. */
  logger?: Logger;
  metrics?: Metrics;
  /** The idempotency store's clock (epoch ms); tests move it to expire leases. */
  now?: () => number;
}

/** The example consumer: ledger events in transactional mode, notifications in lease mode at-most-once. */
export function createConsumerHandler({
  config,
  dynamodb,
  sqs,
  logger = new Logger(),
  metrics = new Metrics(),
  now,
}: ConsumerDependencies) {
  const store = new DynamoDbIdempotencyStore({
    client: dynamodb,
    tableName: config.idempotencyTableName,
    ttlSeconds: config.idempotencyTtlSeconds,
    now,
  });
  return middy<SQSEvent, SQSBatchResponse>()
    .use(injectLambdaContext(logger))
    .use(logMetrics(metrics))
    .use(
      fifoBatch({
        store,
        logger,
        metrics,
        maxConcurrentGroups: config.maxConcurrentGroups,
        deadLetterQueue: { client: sqs, queueUrl: config.dlqUrl, sourceQueueUrl: config.queueUrl },
        operations: {
          ...ledgerOperations(config.ledgerTableName),
          SendNotification: notificationOperation({
            url: config.notificationUrl,
            timeoutMs: config.notificationTimeoutMs,
            mode: config.notificationMode,
          }),
        },
      }),
    );
}
