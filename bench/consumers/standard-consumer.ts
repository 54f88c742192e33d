import type { Logger } from '@aws-lambda-powertools/logger';
import type { Metrics } from '@aws-lambda-powertools/metrics';
import type { DynamoDBClient } from '@aws-sdk/client-dynamodb';
import type { SQSClient } from '@aws-sdk/client-sqs';
import { DynamoDBDocumentClient } from '@aws-sdk/lib-dynamodb';
import { standardBatch } from 'oncely/consumer';
import { DynamoDBIdempotencyStore, type IdempotencyMode } from 'oncely/idempotency';
import { ledgerOperations } from '../../lambdas/shop/consumer/ledger.js';
import { leaseOperations, withTelemetry } from './lease-consumer.js';
import { type ShopEvent, type ShopSettings, shopEventEffect } from './shop-events.js';

export interface StandardConsumerOptions extends ShopSettings {
  /** `transactional`: the example consumer's ledger operations; otherwise lease mode in that mode. */
  mode: 'transactional' | IdempotencyMode;
  dynamodb: DynamoDBClient;
  sqs: SQSClient;
  dlqUrl: string;
  /**
   * The queue the records come from: `standardBatch` sets a record's visibility there to bring it
   * back soon (a key in flight elsewhere) or after its backoff. Without it, after the queue's
   * visibility timeout.
   */
  queueUrl?: string;
  idempotencyTableName: string;
  logger: Logger;
  metrics: Metrics;
  /** `standardBatch`'s option; its default (0) when unset. */
  inFlightWaitMs?: number;
  /** Lease mode: what each record does, instead of the shop's effect (the in-flight duplicates hold it). */
  effect?: (event: ShopEvent) => Promise<void>;
}

/**
 * The example consumer's Middy stack on a standard queue: `standardBatch` with its defaults (up to 100
 * records at once), the ledger's transactional operations or the benchmark's lease operations, the
 * same effect as the Powertools consumer's.
 */
export function createStandardConsumerHandler(options: StandardConsumerOptions) {
  const { dynamodb, logger, metrics, mode } = options;
  const operations =
    mode === 'transactional'
      ? ledgerOperations(options.ledgerTableName)
      : leaseOperations(
          options.effect ?? shopEventEffect(DynamoDBDocumentClient.from(dynamodb), options),
          mode,
        );
  return withTelemetry(logger, metrics).use(
    standardBatch({
      store: new DynamoDBIdempotencyStore({ client: dynamodb, tableName: options.idempotencyTableName }),
      logger,
      metrics,
      deadLetterQueue: { client: options.sqs, queueUrl: options.dlqUrl, sourceQueueUrl: options.queueUrl },
      inFlightWaitMs: options.inFlightWaitMs,
      operations,
    }),
  );
}
